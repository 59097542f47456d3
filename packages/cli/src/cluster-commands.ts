import { Command } from 'commander';
import type { CliIo } from './io';
import { addGatewayOptions, gatewayClient, printResult, type GatewayFlags } from './gateway-options';
import { formatValue, renderTable } from './render';

/** `GET /v1/cluster` (docs/architecture.md §12); every field optional so a newer gateway cannot break the CLI. */
interface ClusterStatus {
  coordinator?: { node?: string | null; epoch?: number } | null;
  nodes?: { id?: string; epoch?: number; live?: boolean; address?: string; kafka?: string; buckets?: number | unknown[] }[];
  buckets?: { table?: string; partition?: string | null; bucket?: number; leader?: string | null; leaderEpoch?: number; state?: string }[];
}

/** `POST /v1/cluster/rebalance` (docs/architecture.md §12). */
interface RebalancePlan {
  moves?: { table?: string; partition?: string | null; bucket?: number; from?: string | null; to?: string }[];
}

interface StatusFlags extends GatewayFlags {
  buckets?: boolean;
}

interface RebalanceFlags extends GatewayFlags {
  dryRun?: boolean;
}

export function renderClusterStatus(status: ClusterStatus, showBuckets = false): string {
  const coordinator = status.coordinator;
  const sections = [
    coordinator?.node ? `coordinator ${coordinator.node} (epoch ${formatValue(coordinator.epoch)})` : 'coordinator: none holds the lease',
  ];
  const nodes = status.nodes ?? [];
  sections.push(
    nodes.length === 0
      ? 'no data nodes'
      : renderTable(
          ['NODE', 'EPOCH', 'LIVE', 'ADDRESS', 'KAFKA', 'BUCKETS'],
          nodes.map((node) => [
            formatValue(node.id),
            formatValue(node.epoch),
            node.live === undefined ? '-' : node.live ? 'yes' : 'no',
            formatValue(node.address),
            formatValue(node.kafka),
            Array.isArray(node.buckets) ? String(node.buckets.length) : formatValue(node.buckets),
          ]),
        ),
  );
  const buckets = status.buckets ?? [];
  const countsByState = new Map<string, number>();
  for (const bucket of buckets) countsByState.set(bucket.state ?? 'unknown', (countsByState.get(bucket.state ?? 'unknown') ?? 0) + 1);
  const counts = [...countsByState.entries()].map(([state, count]) => `${count} ${state}`).join(', ');
  sections.push(`buckets: ${buckets.length}${buckets.length > 0 ? ` (${counts})` : ''}`);
  if (showBuckets && buckets.length > 0) {
    sections.push(
      renderTable(
        ['TABLE', 'PARTITION', 'BUCKET', 'LEADER', 'EPOCH', 'STATE'],
        buckets.map((bucket) => [
          formatValue(bucket.table),
          formatValue(bucket.partition),
          formatValue(bucket.bucket),
          formatValue(bucket.leader),
          formatValue(bucket.leaderEpoch),
          formatValue(bucket.state),
        ]),
      ),
    );
  }
  return sections.join('\n\n');
}

export function renderRebalancePlan(plan: RebalancePlan, dryRun: boolean): string {
  const moves = plan.moves ?? [];
  if (moves.length === 0) return 'balanced: no moves';
  const heading = dryRun ? `would move ${moves.length} bucket(s) (dry run, nothing moved)` : `moved ${moves.length} bucket(s)`;
  const table = renderTable(
    ['TABLE', 'PARTITION', 'BUCKET', 'FROM', 'TO'],
    moves.map((move) => [formatValue(move.table), formatValue(move.partition), formatValue(move.bucket), formatValue(move.from), formatValue(move.to)]),
  );
  return `${heading}\n\n${table}`;
}

/** `mink cluster status|rebalance`. */
export function registerClusterCommands(program: Command, io: CliIo): void {
  const cluster = program.command('cluster').description('inspect and rebalance the cluster');

  addGatewayOptions(
    cluster.command('status').description('coordinator, data nodes and bucket states').option('--buckets', 'list every bucket'),
  ).action(async (flags: StatusFlags) => {
    const status = await gatewayClient(flags, io).get<ClusterStatus>('/v1/cluster');
    printResult(io, flags, status, (result) => renderClusterStatus(result ?? {}, flags.buckets === true));
  });

  addGatewayOptions(
    cluster
      .command('rebalance')
      .description('move orphaned buckets and even out bucket leaders across live nodes')
      .option('--dry-run', 'print the plan without moving anything'),
  ).action(async (flags: RebalanceFlags) => {
    const dryRun = flags.dryRun === true;
    const plan = await gatewayClient(flags, io).post<RebalancePlan>(`/v1/cluster/rebalance?dryRun=${dryRun}`);
    printResult(io, flags, plan, (result) => renderRebalancePlan(result ?? {}, dryRun));
  });
}
