import { entriesIn, type View } from '@mink/meta';

/**
 * The buckets of the view by state, for the cluster's metrics: `open` (its leader opened its stream),
 * `closed` (led, stream not open: a move or failover in progress), `unled` (no LeadBucket yet), and
 * `leader_dead` (led by a node the caller does not see live, whatever its stream's state).
 */
export function bucketsByState(view: View, liveNodes: ReadonlySet<string>): Record<'open' | 'closed' | 'unled' | 'leader_dead', number> {
  const counts = { open: 0, closed: 0, unled: 0, leader_dead: 0 };
  for (const [, record] of entriesIn(view.buckets)) {
    if (record.leader === null) counts.unled++;
    else if (!liveNodes.has(record.leader)) counts.leader_dead++;
    else counts[record.stream.state]++;
  }
  return counts;
}
