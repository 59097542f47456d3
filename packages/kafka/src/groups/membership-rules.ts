/**
 * The pure rules of group membership that `GroupCoordinator` applies: who a request may speak for (static
 * membership, KIP-345), when a restarted static member gets its assignment back without a rebalance, and
 * whether a join fits under the caps. Each is a function of what the coordinator knows and the request,
 * with no clock and no state of its own.
 */
import { ERROR_CODES } from '../wire/codes';
import { decodeConsumerProtocolSubscription } from '../messages/consumer-protocol';

/** What the coordinator knows about the ids a request names. */
export interface MemberIdentityView {
  /** The member id the request's instance id currently belongs to; undefined when the request names no instance or an unknown one. */
  memberIdOfInstance: string | undefined;
  /** The request's member id is a member of the group, with this instance id (null: a dynamic member); undefined when it is not a member. */
  instanceIdOfMember: string | null | undefined;
}

/**
 * The error a request of a member (Heartbeat, SyncGroup, OffsetCommit, LeaveGroup, or a JoinGroup that
 * names its member id) gets for who it claims to be, NONE when it may go on:
 *
 * - FENCED_INSTANCE_ID when it names an instance id and the pair (instance id, member id) is not the
 *   current one: the instance now belongs to another member id (the request comes from an incarnation
 *   that was replaced, as Kafka answers it), or the member id belongs to another instance or to a dynamic
 *   member. The client must not rejoin under that instance id: another process holds it.
 * - UNKNOWN_MEMBER_ID when the member id is not a member (nor fenced): the client forgets its id and joins anew.
 *
 * A request without an instance id is judged by its member id alone: versions before KIP-345 carry none,
 * and a static member may send them (as Kafka accepts).
 */
export function memberIdentityErrorOf(view: MemberIdentityView, request: { memberId: string; groupInstanceId: string | null }): number {
  if (request.groupInstanceId !== null) {
    if (view.memberIdOfInstance !== undefined && view.memberIdOfInstance !== request.memberId) return ERROR_CODES.FENCED_INSTANCE_ID;
    if (view.instanceIdOfMember !== undefined && view.instanceIdOfMember !== request.groupInstanceId) return ERROR_CODES.FENCED_INSTANCE_ID;
  }
  return view.instanceIdOfMember === undefined ? ERROR_CODES.UNKNOWN_MEMBER_ID : ERROR_CODES.NONE;
}

/** One protocol a member runs, as JoinGroup carries it. */
export interface MemberProtocol {
  name: string;
  metadata: Uint8Array;
}

/**
 * Whether a static member that joins again under a new member id (a restarted consumer) gets its stored
 * assignment back at the current generation instead of a rebalance: only when the group is Stable (a
 * rebalance under way must finish with the new id) and the member asks for what it asked before. That is
 * the same protocols, in the same order (so the group's protocol vote cannot change), each with the same
 * subscription. For consumers (`protocolType` "consumer") a subscription is its topics and rack: the owned
 * partitions, the generation and the assignor's user data describe what the previous incarnation held, which
 * a restarted consumer has lost, so they differ on every restart without the member wanting anything new.
 * Other protocol types' metadata is opaque and compared byte for byte.
 *
 * Kafka decides on the protocol vote alone, so a restarted static member that subscribes to other topics
 * keeps its old assignment there until something else rebalances the group; here it rebalances.
 */
export function staticRejoinKeepsAssignment(input: {
  groupState: string;
  protocolType: string;
  previous: readonly MemberProtocol[];
  next: readonly MemberProtocol[];
}): boolean {
  if (input.groupState !== 'Stable' || input.previous.length !== input.next.length) return false;
  return input.previous.every((protocol, index) => {
    const other = input.next[index];
    return protocol.name === other.name && subscriptionKeyOf(input.protocolType, protocol.metadata) === subscriptionKeyOf(input.protocolType, other.metadata);
  });
}

/** What of a protocol's metadata says what the member wants: a consumer's topics (in any order) and rack, else every byte. */
function subscriptionKeyOf(protocolType: string, metadata: Uint8Array): string {
  if (protocolType === 'consumer') {
    try {
      const subscription = decodeConsumerProtocolSubscription(metadata);
      return JSON.stringify({ topics: [...new Set(subscription.topics)].sort(), rackId: subscription.rackId });
    } catch {
      // Not a subscription mink can read: judged by its bytes, like any opaque metadata.
    }
  }
  return `bytes:${Buffer.from(metadata).toString('hex')}`;
}

/** How full the coordinator and the group are when a join arrives, and the caps they must stay within. */
export interface JoinCapView {
  /** Whether the group exists here already (a join of a group that does not would create it). */
  groupExists: boolean;
  /** Groups held by this coordinator, and how many Empty ones among them could make room. */
  groupCount: number;
  emptyGroupCount: number;
  groupsMax: number;
  /** Members of the group, and member ids handed out with MEMBER_ID_REQUIRED that have not joined yet. */
  memberCount: number;
  pendingMemberCount: number;
  membersPerGroupMax: number;
}

/**
 * Why a join is refused for room, or 'admitted'. `join` says what the join would do:
 * - 'new-group-check': before anything else, whether the group may be created at all (a new group beyond
 *   the coordinator's cap is refused unless an Empty group can be dropped to make room);
 * - 'hand-out-id': a member id handed out with MEMBER_ID_REQUIRED also counts against the group's cap,
 *   so a flood of first joins cannot grow the group's pending ids past it;
 * - 'add-member': a new member (a pending id joining, a v0–3 join, a new static instance) needs a free place.
 * A member rejoining, or a static instance coming back under a new id, takes no new place and is not asked about.
 * Both caps answer GROUP_MAX_SIZE_REACHED, the code Kafka answers a full group (it has none for a full
 * coordinator); the coordinator counts which cap it was.
 */
export function joinCapRefusalOf(view: JoinCapView, join: 'new-group-check' | 'hand-out-id' | 'add-member'): 'admitted' | 'coordinator-full' | 'group-full' {
  switch (join) {
    case 'new-group-check':
      return view.groupExists || view.groupCount < view.groupsMax || view.emptyGroupCount > 0 ? 'admitted' : 'coordinator-full';
    case 'hand-out-id':
      return view.memberCount + view.pendingMemberCount < view.membersPerGroupMax ? 'admitted' : 'group-full';
    case 'add-member':
      return view.memberCount < view.membersPerGroupMax ? 'admitted' : 'group-full';
  }
}
