import { randomUUID } from 'node:crypto';
import { ERROR_CODES } from '../wire/codes';
import type { JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember } from '../messages/join-group';
import type { SyncGroupRequest, SyncGroupResponse } from '../messages/sync-group';
import type { HeartbeatRequest } from '../messages/heartbeat';
import type { LeaveGroupRequest, LeaveGroupResponse } from '../messages/leave-group';
import type { DescribedGroup } from '../messages/describe-groups';
import type { ListedGroup } from '../messages/list-groups';

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
 */
export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();

  constructor(private readonly clock: GroupClock = SYSTEM_CLOCK) {}

  join(request: JoinGroupRequest, version: number, client: { clientId: string; clientHost: string }): Promise<JoinGroupResponse> {
    const refuse = (errorCode: number, memberId = request.memberId): Promise<JoinGroupResponse> =>
      Promise.resolve({ throttleTimeMs: 0, errorCode, generationId: -1, protocolName: '', leader: '', memberId, members: [] });
    if (request.groupId === '') return refuse(ERROR_CODES.INVALID_GROUP_ID);
    if (request.sessionTimeoutMs < SESSION_TIMEOUT_MS.min || request.sessionTimeoutMs > SESSION_TIMEOUT_MS.max) return refuse(ERROR_CODES.INVALID_SESSION_TIMEOUT);
    if (request.protocols.length === 0 || request.protocolType === '') return refuse(ERROR_CODES.INCONSISTENT_GROUP_PROTOCOL);
    if (request.memberId !== '' && !this.groups.has(request.groupId)) return refuse(ERROR_CODES.UNKNOWN_MEMBER_ID);
    const group = this.groupOf(request.groupId);
    for (const [pendingId, expiresMs] of group.pendingMemberIds) if (expiresMs < this.clock.nowMs()) group.pendingMemberIds.delete(pendingId);
    if (group.members.size > 0 && group.protocolType !== request.protocolType) return refuse(ERROR_CODES.INCONSISTENT_GROUP_PROTOCOL);
    if (group.members.size > 0 && !request.protocols.some((protocol) => this.allSupport(group, protocol.name))) return refuse(ERROR_CODES.INCONSISTENT_GROUP_PROTOCOL);

    let memberId = request.memberId;
    if (memberId === '') {
      memberId = `${client.clientId || 'member'}-${randomUUID()}`;
      // KIP-394: a new member first learns its id, then joins with it, so a retried join never adds a ghost.
      if (version >= 4) {
        group.pendingMemberIds.set(memberId, this.clock.nowMs() + request.sessionTimeoutMs);
        return refuse(ERROR_CODES.MEMBER_ID_REQUIRED, memberId);
      }
    } else if (!group.members.has(memberId)) {
      const expiresMs = group.pendingMemberIds.get(memberId);
      if (expiresMs === undefined || expiresMs < this.clock.nowMs()) return refuse(ERROR_CODES.UNKNOWN_MEMBER_ID);
    }
    group.pendingMemberIds.delete(memberId);

    return new Promise<JoinGroupResponse>((resolve) => {
      const existing = group.members.get(memberId);
      // A member that joins again while an earlier join or sync of it waits: those are answered at once (the
      // connection answers in order, so a request left waiting would hold up every later one).
      existing?.awaitingJoin?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID, generationId: -1, protocolName: '', leader: '', memberId, members: [] });
      existing?.awaitingSync?.({ throttleTimeMs: 0, errorCode: ERROR_CODES.REBALANCE_IN_PROGRESS, assignment: EMPTY });
      const member: Member = {
        memberId,
        groupInstanceId: request.groupInstanceId,
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
      if (group.members.size === 1) group.protocolType = request.protocolType;
      // A Stable member rejoining with the same protocols and nothing else changing still rebalances: eager
      // members give up their partitions on every join, so the group must hand them out again.
      this.prepareRebalance(group);
      this.maybeCompleteJoin(group);
    });
  }

  sync(request: SyncGroupRequest): Promise<SyncGroupResponse> {
    const answer = (errorCode: number, assignment: Uint8Array = EMPTY): SyncGroupResponse => ({ throttleTimeMs: 0, errorCode, assignment });
    const group = this.groups.get(request.groupId);
    const member = group?.members.get(request.memberId);
    if (!group || !member) return Promise.resolve(answer(ERROR_CODES.UNKNOWN_MEMBER_ID));
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
    const member = group?.members.get(request.memberId);
    if (!group || !member) return ERROR_CODES.UNKNOWN_MEMBER_ID;
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
      const known = group?.members.has(leaving.memberId) ?? false;
      if (group && known) {
        this.removeMember(group, leaving.memberId);
        left++;
      }
      return { memberId: leaving.memberId, groupInstanceId: leaving.groupInstanceId, errorCode: known ? ERROR_CODES.NONE : ERROR_CODES.UNKNOWN_MEMBER_ID };
    });
    // A stale or retried leave of members already gone must not make the others rebalance.
    if (group && left > 0) this.afterMembershipChange(group);
    return { throttleTimeMs: 0, errorCode: ERROR_CODES.NONE, members };
  }

  /**
   * Whether a member may commit offsets now: a member of the current generation, or anyone with generation
   * -1 while the group has no members (a consumer that assigns partitions itself, as kcat does).
   */
  commitErrorOf(groupId: string, generationId: number, memberId: string): number {
    const group = this.groups.get(groupId);
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
      group = { groupId, state: 'Empty', generationId: 0, protocolType: '', protocolName: '', leaderId: '', members: new Map(), pendingMemberIds: new Map(), rebalanceTimer: null, sessionTimer: null };
      this.groups.set(groupId, group);
    }
    return group;
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
    if (timedOut) for (const member of [...group.members.values()]) if (member.awaitingJoin === null) group.members.delete(member.memberId);
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
