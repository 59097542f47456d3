/**
 * NATS subjects of mink's request/reply traffic. Every process serves its own subjects; callers never
 * share memory or files with the processes they call (docs/architecture.md §1).
 */
export const SUBJECTS = {
  /** Coordinator actions, served by every coordinator replica in one queue group; non-holders forward. */
  coordinatorRpc: 'mink.coordinator.rpc',
  coordinatorQueue: 'coordinators',
  /** One coordinator replica, addressed directly (used to forward to the lease holder). */
  coordinatorDirect: (coordinatorId: string) => `mink.coordinator.direct.${coordinatorId}`,
  /** A data node's advertised address: the prefix of its request subjects. */
  nodeAddress: (nodeId: string) => `mink.node.${nodeId}`,
  /** Requests any data node can answer from its view (queue group `nodesQueue`). */
  anyNodeRpc: 'mink.nodes.rpc',
  nodesQueue: 'nodes',
  /** Requests to one data node. */
  nodeRpc: (address: string) => `${address}.rpc`,
  /**
   * The inbox prefix of an outside client's connection (`MinkClient.connect`): a secure cluster lets its
   * client identity hear replies under it only, never on the services' inboxes (nats.js's default `_INBOX`).
   */
  clientInboxPrefix: '_INBOX.client',
} as const;
