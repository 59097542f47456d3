import { randomUUID } from 'node:crypto';
import { LIMITS } from '@mink/config';
import { ERROR_CODES } from '../wire/codes';
import type { JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember } from '../messages/join-group';
import type { SyncGroupRequest, SyncGroupResponse } from '../messages/sync-group';
import type { HeartbeatRequest } from '../messages/heartbeat';
import type { LeaveGroupRequest, LeaveGroupResponse } from '../messages/leave-group';
import type { DescribedGroup } from '../messages/describe-groups';
import type { ListedGroup } from '../messages/list-groups';
import { joinCapRefusalOf, memberIdentityErrorOf, staticRejoinKeepsAssignment, type JoinCapView, type MemberIdentityView } from './membership-rules';

/** Time and timers, injected so the state machine runs on a fake clock in tests. */
export interface GroupClock {
  nowMs(): number;
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const SYSTEM_CLOCK: GroupClock = {
  nowMs: () => Date.now(),
  setTimeout: (callback, delayMs) => {
    const handle = setTimeout(callback, delayMs);
    handle.unref?.();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Bounds a member's session timeout must fall within (Kafka's group.min/max.session.timeout.ms, the minimum lowered for tests). */
export const SESSION_TIMEOUT_MS = { min: 1_000, max: 1_800_000 } as const;

/** The caps a coordinator keeps its groups within: LIMITS by default, small ones in tests. */
export interface GroupCoordinatorCaps {
  /** Members of one group, with the member ids handed out and not yet joined (LIMITS.kafkaGroupMembersMax). */
  membersPerGroupMax: number;
  /** Groups held at once (LIMITS.kafkaGroupsPerCoordinatorMax). */
  groupsMax: number;
}

export const DEFAULT_GROUP_COORDINATOR_CAPS: GroupCoordinatorCaps = { membersPerGroupMax: LIMITS.kafkaGroupMembersMax, groupsMax: LIMITS.kafkaGroupsPerCoordinatorMax };

/**
 * Joins refused with GROUP_MAX_SIZE_REACHED since the coordinator started, by the cap that refused them, and
 * the group of the latest: a caller reports them at its own pace (a log line a minute, a metric), never one
 * line per request, since a client refused retries at once.
 */
export interface JoinRefusals {
  /** The group had `membersPerGroupMax` members (and handed-out ids). */
  groupFull: number;
  /** The join would have created a group beyond `groupsMax`, and no Empty group could make room. */
  coordinatorFull: number;
  lastGroupId: string | null;
}

/** The group states of Kafka's classic (eager) protocol, named as DescribeGroups reports them. */
export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable';

interface Member {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocols: { name: string; metadata: Uint8Array }[];
  assignment: Uint8Array;
  lastHeartbeatMs: number;
  /** Set while the member waits in JoinGroup for the rebalance to complete. */
  awaitingJoin: ((response: JoinGroupResponse) => void) | null;
  /** Set while the member waits in SyncGroup for the leader's assignment. */
  awaitingSync: ((response: SyncGroupResponse) => void) | null;
}

interface Group {
  groupId: string;
  state: GroupState;
  generationId: number;
  protocolType: string;
  protocolName: string;
  leaderId: string;
  members: Map<string, Member>;
  /** Member ids handed out with MEMBER_ID_REQUIRED and not yet used to join, with when they expire. */
  pendingMemberIds: Map<string, number>;
  /** Static members (KIP-345): each group instance id with the member id that holds it now; every entry names a member. */
  staticMembers: Map<string, string>;
  rebalanceTimer: unknown;
  sessionTimer: unknown;
}

const EMPTY = new Uint8Array(0);

/**
 * The group coordinator of Kafka's classic consumer-group protocol (KIP-62 timeouts, KIP-394 member ids,
 * eager rebalances), for the groups whose coordinator this node is. It holds membership only: committed
 * offsets live in a table and survive the coordinator moving, while a moved group starts empty and its
 * members rejoin, as after a Kafka coordinator failover.
 *
 * - JoinGroup (v4+) from a member without an id answers MEMBER_ID_REQUIRED with a fresh id.
 * - A join moves the group to PreparingRebalance; the join completes when every known member has rejoined
 *   or the rebalance timeout (the largest of the members') passes, and those that did not rejoin are out.
 *   Completion bumps the generation, picks the protocol every member supports (by the members' votes),
 *   keeps or picks the leader, and answers every waiting member (the leader with the members' metadata).
 * - SyncGroup from the leader stores every member's assignment and moves the group to Stable, answering
 *   the followers that were waiting; a follower's SyncGroup waits for the leader's.
 * - Heartbeats keep members; a member silent for its session timeout is removed and the others rebalance.
 *   While members must rejoin (PreparingRebalance) heartbeats answer REBALANCE_IN_PROGRESS.
 * - Offsets may be committed by members of the current generation, except between JoinGroup and SyncGroup;
 *   generation -1 commits (consumers assigning partitions themselves) only while the group has no members.
 * - Static members (KIP-345, `group.instance.id`) join in one step, without MEMBER_ID_REQUIRED. A known
 *   instance joining without a member id (a restarted consumer) gets a fresh id that replaces the old one,
 *   which is fenced from then on (FENCED_INSTANCE_ID to any request naming the instance with another id);
 *   when the group is Stable and the member asks for what it asked before, it gets the current generation
 *   and, from SyncGroup, its stored assignment: no rebalance. Static members do not leave on close, so one
 *   that is gone stays until its session times out (or a LeaveGroup v3 names its instance id).
 * - Cooperative rebalancing (KIP-429) needs nothing of its own: it runs on this protocol from the client,
 *   whose members keep their partitions while rejoining and join a second time after revoking some; every
 *   rejoin starts a rebalance, so the second one runs.
 * - A join that would grow a group beyond `membersPerGroupMax` or the coordinator beyond `groupsMax` groups
 *   is refused with GROUP_MAX_SIZE_REACHED and counted (`joinRefusals`).
 */
export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();
  private readonly refusals: JoinRefusals = { groupFull: 0, coordinatorFull: 0, lastGroupId: null };

  constructor(
    private readonly clock: GroupClock = SYSTEM_CLOCK,
    private readonly caps: GroupCoordinatorCaps = DEFAULT_GROUP_COORDINATOR_CAPS,
  ) {}

  join(request: JoinGroupRequest, version: number, client: { clientId: string; clientHost: string }): Promise<JoinGroupResponse> {
    const refuse = (errorCode: number, memberId = request.memberId): Promise<JoinGroupResponse> =>
      Promise.resolve({ throttleTimeMs: 0, errorCode, generationId: -1, protocolName: '', leader: '', memberId, members: [] });
    if (request.groupId === '') return refuse(ERROR_CODES.INVALID_GROUP_ID);
    if (request.sessionTimeoutMs < SESSION_TIMEOUT_MS.min || request.sessionTimeoutMs > SESSION_TIMEOUT_MS.max) return refuse(ERROR_CODES.INVALID_SESSION_TIMEOUT);
    if (request.protocols.length === 0 || request.protocolType === '') return refuse(ERROR_CODES.INCONSISTENT_GROUP_PROTOCOL);
    if (request.memberId !== '' && !this.groups.has(request.groupId)) return refuse(ERROR_CODES.UNKNOWN_MEMBER_ID);
    if (!this.groups.has(request.groupId)) {
      const refusal = joinCapRefusalOf(this.capViewOf(undefined), 'new-group-check');
      if (refusal !== 'admitted') return refuse(this.countRefusal(refusal, request.groupId));
      if (this.groups.size >= this.caps.groupsMax) this.dropOneEmptyGroup();
    }
    const group = this.groupOf(request.groupId);
    for (const [pendingId, expiresMs] of group.pendingMemberIds) if (expiresMs < this.clock.nowMs()) group.pendingMemberIds.delete(pendingId);
    if (group.members.size > 0 && group.protocolType !== request.protocolType) return refuse(ERROR_CODES.INCONSISTENT_GROUP_PROTOCOL);
    if (group.members.size > 0 && !request.protocols.some((protocol) => this.allSupport(group, protocol.name))) return refuse(ERROR_CODES.INCONSISTENT_GROUP_PROTOCOL);
    const roomFor = (join: 'hand-out-id' | 'add-member'): number => {
      const refusal = joinCapRefusalOf(this.capViewOf(group), join);
      return refusal === 'admitted' ? ERROR_CODES.NONE : this.countRefusal(refusal, group.groupId);
    };
    const freshMemberId = (): string => `${client.clientId || 'member'}-${randomUUID()}`;

    if (request.memberId === '') {
      if (request.groupInstanceId !== null) {
        const previousId = group.staticMembers.get(request.groupInstanceId);
        if (previousId !== undefined) return this.replaceStaticMember(group, previousId, freshMemberId(), request, client);
        // KIP-345: the instance id already names the member, so a new static member joins in one step, as in Kafka.
        const full = roomFor('add-member');
        return full !== ERROR_CODES.NONE ? refuse(full) : this.admit(group, freshMemberId(), request, client);
      }
      const memberId = freshMemberId();
      // KIP-394: a new member first learns its id, then joins with it, so a retried join never adds a ghost.
      if (version >= 4) {
        const full = roomFor('hand-out-id');
        if (full !== ERROR_CODES.NONE) return refuse(full);
        group.pendingMemberIds.set(memberId, this.clock.nowMs() + request.sessionTimeoutMs);
        return refuse(ERROR_CODES.MEMBER_ID_REQUIRED, memberId);
      }
      const full = roomFor('add-member');
      return full !== ERROR_CODES.NONE ? refuse(full) : this.admit(group, memberId, request, client);
    }

    const identity = memberIdentityErrorOf(this.identityOf(group, request), request);
    if (identity === ERROR_CODES.FENCED_INSTANCE_ID) return refuse(identity);
    if (identity === ERROR_CODES.UNKNOWN_MEMBER_ID) {
      // Only dynamic members hold handed-out ids: a static member with an unknown id forgets it and joins without one.
      const expiresMs = group.pendingMemberIds.get(request.memberId);
      if (request.groupInstanceId !== null || expiresMs === undefined || expiresMs < this.clock.nowMs()) return refuse(ERROR_CODES.UNKNOWN_MEMBER_ID);
      const full = roomFor('add-member');
      if (full !== ERROR_CODES.NONE) return refuse(full);
      group.pendingMemberIds.delete(request.memberId);
    }
    return this.admit(group, request.memberId, request, client);
  }

  /** The joins refused for room so far, as a copy (see JoinRefusals). */
  joinRefusals(): JoinRefusals {
    return { ...this.refusals };
  }

  sync(request: SyncGroupRequest): Promise<SyncGroupResponse> {
    const answer = (errorCode: number, assignment: Uint8Array = EMPTY): SyncGroupResponse => ({ throttleTimeMs: 0, errorCode, assignment });
    const group = this.groups.get(request.groupId);
    if (!group) return Promise.resolve(answer(ERROR_CODES.UNKNOWN_MEMBER_ID));
    const identity = memberIdentityErrorOf(this.identityOf(group, request), request);
    if (identity !== ERROR_CODES.NONE) return Promise.resolve(answer(identity));
    const member = group.members.get(request.memberId)!;
    if (request.generationId !== group.generationId) return Promise.resolve(answer(ERROR_CODES.ILLEGAL_GENERATION));
    member.lastHeartbeatMs = this.clock.nowMs();
    switch (group.state) {
      case 'Empty':
        return Promise.resolve(answer(ERROR_CODES.UNKNOWN_MEMBER_ID));
      case 'PreparingRebalance':
        return Promise.resolve(answer(ERROR_CODES.REBALANCE_IN_PROGRESS));
      case 'Stable':
        return Promise.resolve(answer(ERROR_CODES.NONE, member.assignment));
      case 'CompletingRebalance':
        return new Promise<SyncGroupResponse>((resolve) => {
          member.awaitingSync = resolve;
          if (request.memberId !== group.leaderId) return;
          const assigned = new Map(request.assignments.map((entry) => [entry.memberId, entry.assignment]));
          for (const each of group.members.values()) each.assignment = assigned.get(each.memberId) ?? EMPTY;
          group.state = 'Stable';
          this.armSessionTimer(group);
          for (const each of group.members.values()) {
            const waiting = each.awaitingSync;
            each.awaitingSync = null;
            waiting?.(answer(ERROR_CODES.NONE, each.assignment));
          }
        });
    }
  }

  heartbeat(request: HeartbeatRequest): number {
    const group = this.groups.get(request.groupId);
    if (!group) return ERROR_CODES.UNKNOWN_MEMBER_ID;
    const identity = memberIdentityErrorOf(this.identityOf(group, request), request);
    if (identity !== ERROR_CODES.NONE) return identity;
    const member = group.members.get(request.memberId)!;
    if (request.generationId !== group.generationId) return ERROR_CODES.ILLEGAL_GENERATION;
    member.lastHeartbeatMs = this.clock.nowMs();
    // As in Kafka: only a rebalance that needs members to rejoin is signalled; one completing (members
    // between JoinGroup and SyncGroup) is not.
    return group.state === 'PreparingRebalance' ? ERROR_CODES.REBALANCE_IN_PROGRESS : ERROR_CODES.NONE;
  }

  leave(request: LeaveGroupRequest): LeaveGroupResponse {
    const group = this.groups.get(request.groupId);
    let left = 0;
    const members = request.members.map((leaving) => {
      const outcome = (errorCode: number) => ({ memberId: leaving.memberId, groupInstanceId: leaving.groupInstanceId, errorCode });
      if (!group) return outcome(ERROR_CODES.UNKNOWN_MEMBER_ID);
      if (leaving.memberId === '') {
        // KIP-345: an administrator removes a static member by its instance id alone, whichever id holds it now.
        const currentId = leaving.groupInstanceId === null ? undefined : group.staticMembers.get(leaving.groupInstanceId);
        if (currentId === undefined) return outcome(ERROR_CODES.UNKNOWN_MEMBER_ID);
        this.removeMember(group, currentId);
        left++;
        return outcome(ERROR_CODES.NONE);
      }
      // A joiner that gives up between MEMBER_ID_REQUIRED and its join frees its place at once, as in Kafka.
      if (group.pendingMemberIds.delete(leaving.memberId)) return outcome(ERROR_CODES.NONE);
      const errorCode = memberIdentityErrorOf(this.identityOf(group, leaving), leaving);
      if (errorCode === ERROR_CODES.NONE) {
        this.removeMember(group, leaving.memberId);
        left++;
      }
      return outcome(errorCode);
    });
    // A stale or retried leave of members already gone must not make the others rebalance.
    if (group && left > 0) this.afterMembershipChange(group);
    return { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE, members };
  }

  /**
   * Whether a member may commit offsets now: a member of the current generation, or anyone with generation
   * -1 while the group has no members (a consumer that assigns partitions itself, as kcat does). A commit
   * naming a static instance (OffsetCommit v7+) with a member id that no longer holds it is fenced first.
   */
  commitErrorOf(groupId: string, generationId: number, memberId: string, groupInstanceId: string | null = null): number {
    const group = this.groups.get(groupId);
    if (group && groupInstanceId !== null) {
      const identity = memberIdentityErrorOf(this.identityOf(group, { memberId, groupInstanceId }), { memberId, groupInstanceId });
      if (identity === ERROR_CODES.FENCED_INSTANCE_ID) return identity;
    }
    if (generationId < 0) return group && group.members.size > 0 ? ERROR_CODES.ILLEGAL_GENERATION : ERROR_CODES.NONE;
    const member = group?.members.get(memberId);
    if (!group || !member) return ERROR_CODES.UNKNOWN_MEMBER_ID;
    if (generationId !== group.generationId) return ERROR_CODES.ILLEGAL_GENERATION;
    // As in Kafka: an eager member commits what it consumed before it rejoins (PreparingRebalance), while
    // between JoinGroup and SyncGroup nobody owns partitions of the new generation yet.
    if (group.state === 'CompletingRebalance') return ERROR_CODES.REBALANCE_IN_PROGRESS;
    member.lastHeartbeatMs = this.clock.nowMs();
    return ERROR_CODES.NONE;
  }

  listGroups(): ListedGroup[] {
    return [...this.groups.values()].map((group) => ({ groupId: group.groupId, protocolType: group.protocolType }));
  }

  describe(groupId: string): DescribedGroup {
    const group = this.groups.get(groupId);
    const base = { errorCode: ERROR_CODES.NONE, groupId, authorizedOperations: -2147483648 };
    if (!group) return { ...base, groupState: 'Dead', protocolType: '', protocolData: '', members: [] };
    return {
      ...base,
      groupState: group.state,
      protocolType: group.protocolType,
      protocolData: group.state === 'Stable' ? group.protocolName : '',
      members: [...group.members.values()].map((member) => ({
        memberId: member.memberId,
        groupInstanceId: member.groupInstanceId,
        clientId: member.clientId,
        clientHost: member.clientHost,
        // As in Kafka: metadata and assignment describe a settled group only.
        memberMetadata: group.state === 'Stable' ? (member.protocols.find((protocol) => protocol.name === group.protocolName)?.metadata ?? EMPTY) : EMPTY,
        memberAssignment: group.state === 'Stable' ? member.assignment : EMPTY,
      })),
    };
  }

  /** This node stopped coordinating `groupId`'s bucket: waiting members are told to find the new coordinator. */
  forget(groupId: string): void {
    const group = this.groups.get(groupId);
    if (!group) return;
    this.groups.delete(groupId);
    this.clock.clearTimeout(group.rebalanceTimer);
    this.clock.clearTimeout(group.sessionTimer);
    for (const member of group.members.values()) {
      member.awaitingJoin?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.NOT_COORDINATOR, generationId: -1, protocolName: '', leader: '', memberId: member.memberId, members: [] });
      member.awaitingSync?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.NOT_COORDINATOR, assignment: EMPTY });
    }
  }

  /** Group ids held here, so the node can forget those whose bucket it no longer leads. */
  groupIds(): string[] {
    return [...this.groups.keys()];
  }

  private groupOf(groupId: string): Group {
    let group = this.groups.get(groupId);
    if (!group) {
      group = {
        groupId,
        state: 'Empty',
        generationId: 0,
        protocolType: '',
        protocolName: '',
        leaderId: '',
        members: new Map(),
        pendingMemberIds: new Map(),
        staticMembers: new Map(),
        rebalanceTimer: null,
        sessionTimer: null,
      };
      this.groups.set(groupId, group);
    }
    return group;
  }

  /** Adds a member, or takes a member's rejoin: it waits in JoinGroup and the group rebalances. */
  private admit(group: Group, memberId: string, request: JoinGroupRequest, client: { clientId: string; clientHost: string }): Promise<JoinGroupResponse> {
    return new Promise<JoinGroupResponse>((resolve) => {
      const existing = group.members.get(memberId);
      // A member that joins again while an earlier join or sync of it waits: those are answered at once (the
      // connection answers in order, so a request left waiting would hold up every later one).
      existing?.awaitingJoin?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID, generationId: -1, protocolName: '', leader: '', memberId, members: [] });
      existing?.awaitingSync?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.REBALANCE_IN_PROGRESS, assignment: EMPTY });
      // A static member stays the instance it joined as, also when a rejoin's version carries no instance id.
      const groupInstanceId = existing ? existing.groupInstanceId : request.groupInstanceId;
      const member: Member = {
        memberId,
        groupInstanceId,
        clientId: client.clientId,
        clientHost: client.clientHost,
        sessionTimeoutMs: request.sessionTimeoutMs,
        rebalanceTimeoutMs: request.rebalanceTimeoutMs,
        protocols: request.protocols.map((protocol) => ({ name: protocol.name, metadata: protocol.metadata })),
        assignment: existing?.assignment ?? EMPTY,
        lastHeartbeatMs: this.clock.nowMs(),
        awaitingJoin: resolve,
        awaitingSync: null,
      };
      group.members.set(memberId, member);
      if (groupInstanceId !== null) group.staticMembers.set(groupInstanceId, memberId);
      if (group.members.size === 1) group.protocolType = request.protocolType;
      // A Stable member rejoining with the same protocols and nothing else changing still rebalances: eager
      // members give up their partitions on every join, so the group must hand them out again, and a
      // cooperative member joins again exactly when it has revoked partitions that others must now get.
      this.prepareRebalance(group);
      this.maybeCompleteJoin(group);
    });
  }

  /**
   * A known static instance joins without a member id (a restarted consumer): `memberId` replaces its old
   * id, whose waiting requests are answered FENCED_INSTANCE_ID, as is every later request naming the
   * instance with it. The member keeps its assignment and leadership. In a Stable group, when it asks for
   * what it asked before (staticRejoinKeepsAssignment), it gets the current generation at once and its
   * stored assignment from SyncGroup; otherwise the group rebalances (also when a rebalance is completing:
   * the leader's assignment would name the old id).
   */
  private replaceStaticMember(group: Group, previousId: string, memberId: string, request: JoinGroupRequest, client: { clientId: string; clientHost: string }): Promise<JoinGroupResponse> {
    const previous = group.members.get(previousId)!;
    previous.awaitingJoin?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.FENCED_INSTANCE_ID, generationId: -1, protocolName: '', leader: '', memberId: previousId, members: [] });
    previous.awaitingSync?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.FENCED_INSTANCE_ID, assignment: EMPTY });
    const keepsAssignment = staticRejoinKeepsAssignment({ groupState: group.state, protocolType: group.protocolType, previous: previous.protocols, next: request.protocols });
    const leaderBefore = group.leaderId;
    const member: Member = {
      ...previous,
      memberId,
      clientId: client.clientId,
      clientHost: client.clientHost,
      sessionTimeoutMs: request.sessionTimeoutMs,
      rebalanceTimeoutMs: request.rebalanceTimeoutMs,
      protocols: request.protocols.map((protocol) => ({ name: protocol.name, metadata: protocol.metadata })),
      lastHeartbeatMs: this.clock.nowMs(),
      awaitingJoin: null,
      awaitingSync: null,
    };
    group.members.delete(previousId);
    group.members.set(memberId, member);
    group.staticMembers.set(previous.groupInstanceId!, memberId);
    if (group.leaderId === previousId) group.leaderId = memberId;
    if (keepsAssignment) {
      this.armSessionTimer(group);
      // The leader named is the one before the replacement: a restarted leader must not take the answer as
      // a call to assign, since a Stable group keeps the assignment it has (as Kafka answers before KIP-814).
      return Promise.resolve({
        throttleTimeMs: 0,
        errorCode: ERROR_CODES.NONE,
        generationId: group.generationId,
        protocolName: group.protocolName,
        leader: leaderBefore,
        memberId,
        members: [],
      });
    }
    return new Promise<JoinGroupResponse>((resolve) => {
      member.awaitingJoin = resolve;
      this.prepareRebalance(group);
      this.maybeCompleteJoin(group);
    });
  }

  /** What the group knows of the ids a request names, for memberIdentityErrorOf. */
  private identityOf(group: Group, request: { memberId: string; groupInstanceId: string | null }): MemberIdentityView {
    return {
      memberIdOfInstance: request.groupInstanceId === null ? undefined : group.staticMembers.get(request.groupInstanceId),
      instanceIdOfMember: group.members.get(request.memberId)?.groupInstanceId,
    };
  }

  /** How full this coordinator and `group` (undefined: a group a join would create) are. */
  private capViewOf(group: Group | undefined): JoinCapView {
    const atGroupCap = this.groups.size >= this.caps.groupsMax;
    let emptyGroupCount = 0;
    // Counted only when it matters (a new group at the cap), so a join does not walk every group.
    if (group === undefined && atGroupCap) for (const each of this.groups.values()) if (each.members.size === 0) emptyGroupCount++;
    return {
      groupExists: group !== undefined,
      groupCount: this.groups.size,
      emptyGroupCount,
      groupsMax: this.caps.groupsMax,
      memberCount: group?.members.size ?? 0,
      pendingMemberCount: group?.pendingMemberIds.size ?? 0,
      membersPerGroupMax: this.caps.membersPerGroupMax,
    };
  }

  private countRefusal(refusal: 'coordinator-full' | 'group-full', groupId: string): number {
    if (refusal === 'group-full') this.refusals.groupFull++;
    else this.refusals.coordinatorFull++;
    this.refusals.lastGroupId = groupId;
    return ERROR_CODES.GROUP_MAX_SIZE_REACHED;
  }

  /**
   * Drops the oldest group without members to make room for a new one: it holds only a generation number
   * (its offsets live in the offsets table), so it reads as Dead from then on instead of Empty, and the
   * member ids it handed out stop working (their joiners start over).
   */
  private dropOneEmptyGroup(): void {
    for (const group of this.groups.values()) {
      if (group.members.size === 0) {
        this.forget(group.groupId);
        return;
      }
    }
  }

  private allSupport(group: Group, protocol: string): boolean {
    for (const member of group.members.values()) if (!member.protocols.some((each) => each.name === protocol)) return false;
    return true;
  }

  /** Starts a rebalance unless one is going on: members must rejoin within the largest rebalance timeout. */
  private prepareRebalance(group: Group): void {
    if (group.state === 'PreparingRebalance') return;
    // Followers still waiting for an assignment of the old generation must rejoin.
    for (const member of group.members.values()) {
      const waiting = member.awaitingSync;
      member.awaitingSync = null;
      waiting?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.REBALANCE_IN_PROGRESS, assignment: EMPTY });
    }
    group.state = 'PreparingRebalance';
    this.clock.clearTimeout(group.rebalanceTimer);
    let timeoutMs = 0;
    for (const member of group.members.values()) timeoutMs = Math.max(timeoutMs, member.rebalanceTimeoutMs);
    group.rebalanceTimer = this.clock.setTimeout(() => this.completeJoin(group, true), timeoutMs);
  }

  private maybeCompleteJoin(group: Group): void {
    if (group.state !== 'PreparingRebalance') return;
    for (const member of group.members.values()) if (member.awaitingJoin === null) return;
    this.completeJoin(group, false);
  }

  /** Ends the join phase: members that did not rejoin are out, the rest get the new generation. */
  private completeJoin(group: Group, timedOut: boolean): void {
    if (group.state !== 'PreparingRebalance' || this.groups.get(group.groupId) !== group) return;
    this.clock.clearTimeout(group.rebalanceTimer);
    group.rebalanceTimer = null;
    if (timedOut) for (const member of [...group.members.values()]) if (member.awaitingJoin === null) this.removeMember(group, member.memberId);
    group.generationId++;
    if (group.members.size === 0) {
      group.state = 'Empty';
      group.protocolName = '';
      group.leaderId = '';
      return;
    }
    group.protocolName = this.electProtocol(group);
    if (!group.members.has(group.leaderId)) group.leaderId = group.members.keys().next().value!;
    group.state = 'CompletingRebalance';
    const everyone: JoinGroupResponseMember[] = [...group.members.values()].map((member) => ({
      memberId: member.memberId,
      groupInstanceId: member.groupInstanceId,
      metadata: member.protocols.find((protocol) => protocol.name === group.protocolName)!.metadata,
    }));
    for (const member of group.members.values()) {
      const waiting = member.awaitingJoin;
      member.awaitingJoin = null;
      member.lastHeartbeatMs = this.clock.nowMs();
      waiting?.({
        throttleTimeMs: 0,
        errorCode: ERROR_CODES.NONE,
        generationId: group.generationId,
        protocolName: group.protocolName,
        leader: group.leaderId,
        memberId: member.memberId,
        members: member.memberId === group.leaderId ? everyone : [],
      });
    }
    this.armSessionTimer(group);
  }

  /** Each member votes for the first protocol of its list that every member supports; the most votes win, ties to the first named. */
  private electProtocol(group: Group): string {
    const votes = new Map<string, number>();
    for (const member of group.members.values()) {
      const choice = member.protocols.find((protocol) => this.allSupport(group, protocol.name));
      if (choice) votes.set(choice.name, (votes.get(choice.name) ?? 0) + 1);
    }
    let best = '';
    let bestVotes = 0;
    for (const [name, count] of votes) {
      if (count > bestVotes) {
        best = name;
        bestVotes = count;
      }
    }
    return best;
  }

  /** Checks sessions at the earliest expiry among the members; an expired member leaves and the others rebalance. */
  private armSessionTimer(group: Group): void {
    this.clock.clearTimeout(group.sessionTimer);
    group.sessionTimer = null;
    if (group.members.size === 0) return;
    let nextExpiryMs = Number.POSITIVE_INFINITY;
    // Members waiting in JoinGroup are governed by the rebalance timeout, not their sessions.
    for (const member of group.members.values()) if (member.awaitingJoin === null) nextExpiryMs = Math.min(nextExpiryMs, member.lastHeartbeatMs + member.sessionTimeoutMs);
    if (nextExpiryMs === Number.POSITIVE_INFINITY) return;
    group.sessionTimer = this.clock.setTimeout(() => this.expireSessions(group), Math.max(0, nextExpiryMs - this.clock.nowMs()) + 1);
  }

  private expireSessions(group: Group): void {
    if (this.groups.get(group.groupId) !== group) return;
    const nowMs = this.clock.nowMs();
    let removed = false;
    for (const member of [...group.members.values()]) {
      // A member waiting in JoinGroup is alive: the rebalance timeout governs it.
      if (member.awaitingJoin === null && member.lastHeartbeatMs + member.sessionTimeoutMs < nowMs) {
        this.removeMember(group, member.memberId);
        removed = true;
      }
    }
    if (removed) this.afterMembershipChange(group);
    else this.armSessionTimer(group);
  }

  private removeMember(group: Group, memberId: string): void {
    const member = group.members.get(memberId);
    if (!member) return;
    group.members.delete(memberId);
    if (member.groupInstanceId !== null && group.staticMembers.get(member.groupInstanceId) === memberId) group.staticMembers.delete(member.groupInstanceId);
    member.awaitingJoin?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID, generationId: -1, protocolName: '', leader: '', memberId, members: [] });
    member.awaitingSync?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID, assignment: EMPTY });
  }

  /** After members left: an empty group rests, others rebalance (or finish the join they were in). */
  private afterMembershipChange(group: Group): void {
    if (group.members.size === 0) {
      this.clock.clearTimeout(group.rebalanceTimer);
      this.clock.clearTimeout(group.sessionTimer);
      group.rebalanceTimer = null;
      group.sessionTimer = null;
      if (group.state !== 'Empty') group.generationId++;
      group.state = 'Empty';
      group.protocolName = '';
      group.leaderId = '';
      return;
    }
    this.prepareRebalance(group);
    this.maybeCompleteJoin(group);
    this.armSessionTimer(group);
  }
}
