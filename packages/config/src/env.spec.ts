import { DEFAULTS } from './limits';
import { ENV, readServiceConfig } from './env';

describe('readServiceConfig: MINK_META_SNAPSHOT_EVERY', () => {
  it('reads the snapshot interval of the metadata view, defaulting to DEFAULTS.metaSnapshotEveryCommands', () => {
    // Proves the variable reaches the config as a number and its absence gives the documented default (1000).
    expect(ENV.metaSnapshotEveryCommands).toBe('MINK_META_SNAPSHOT_EVERY');
    expect(readServiceConfig({}).metaSnapshotEveryCommands).toBe(DEFAULTS.metaSnapshotEveryCommands);
    expect(DEFAULTS.metaSnapshotEveryCommands).toBe(10_000);
    expect(readServiceConfig({ MINK_META_SNAPSHOT_EVERY: '250' }).metaSnapshotEveryCommands).toBe(250);
  });

  it.each(['0', '-5', '2.5', 'often'])('refuses %p, since a snapshot every zero or a fraction of commands means nothing', (value) => {
    // Proves a bad interval stops the service at start instead of disabling snapshots silently.
    expect(() => readServiceConfig({ MINK_META_SNAPSHOT_EVERY: value })).toThrow('MINK_META_SNAPSHOT_EVERY');
  });
});
