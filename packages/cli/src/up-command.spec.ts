import { resolve } from 'node:path';
import { parseBindHost } from './options';
import { clusterOptionsFromFlags, type UpFlags } from './up-command';

const FLAGS: UpFlags = {
  nodes: 3,
  coordinators: 2,
  tieringWorkers: 1,
  dataDir: '.mink',
  gatewayPort: 8080,
  gatewayHost: '127.0.0.1',
  kafkaPort: 9092,
  leaseTtl: 30_000,
  coordinatorTick: 5_000,
  logLevel: 'info',
};

describe('mink up options', () => {
  it('runs no process under the profiler unless asked', () => {
    // Proves profiling is opt-in: without --cpu-prof the cluster options carry no profile folder.
    expect(clusterOptionsFromFlags(FLAGS)).not.toHaveProperty('cpuProfileDir');
  });

  it('passes --cpu-prof to every process as an absolute folder', () => {
    // Proves the flag reaches LocalCluster, resolved against the working directory like --data-dir.
    expect(clusterOptionsFromFlags({ ...FLAGS, cpuProf: 'profiles' })).toMatchObject({ cpuProfileDir: resolve('profiles'), dataDir: resolve('.mink') });
  });

  it('binds the gateway to loopback unless --gateway-host says otherwise', () => {
    // Proves secure by default reaches the cluster options: only an explicit flag widens the gateway's address.
    expect(clusterOptionsFromFlags(FLAGS)).toMatchObject({ gatewayBindHost: '127.0.0.1' });
    expect(clusterOptionsFromFlags({ ...FLAGS, gatewayHost: '0.0.0.0' })).toMatchObject({ gatewayBindHost: '0.0.0.0' });
  });

  it.each(['localhost', '', '300.1.1.1', 'every'])('refuses --gateway-host %p: an IP address is needed', (value) => {
    expect(() => parseBindHost(value)).toThrow('expected an IP address to bind');
  });

  it('passes --tiering-workers to the cluster', () => {
    expect(clusterOptionsFromFlags({ ...FLAGS, tieringWorkers: 2 })).toMatchObject({ tieringWorkers: 2 });
  });
});
