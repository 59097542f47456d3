import { ERROR_CODES } from '../wire/codes';
import { encodeConsumerProtocolSubscription, type ConsumerProtocolSubscription } from '../messages/consumer-protocol';
import { joinCapRefusalOf, memberIdentityErrorOf, staticRejoinKeepsAssignment, type JoinCapView, type MemberIdentityView, type MemberProtocol } from './membership-rules';

describe('memberIdentityErrorOf', () => {
  // Each row proves who a request may speak for: the pair (instance id, member id) must be the current one
  // when the request names an instance; a request without one is judged by its member id alone.
  it.each<{ name: string; view: MemberIdentityView; request: { memberId: string; groupInstanceId: string | null }; errorCode: number }>([
    { name: 'a dynamic member', view: { memberIdOfInstance: undefined, instanceIdOfMember: null }, request: { memberId: 'm-1', groupInstanceId: null }, errorCode: ERROR_CODES.NONE },
    { name: 'an unknown dynamic member', view: { memberIdOfInstance: undefined, instanceIdOfMember: undefined }, request: { memberId: 'm-9', groupInstanceId: null }, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID },
    { name: 'a static member with its current pair', view: { memberIdOfInstance: 'm-2', instanceIdOfMember: 'i-a' }, request: { memberId: 'm-2', groupInstanceId: 'i-a' }, errorCode: ERROR_CODES.NONE },
    // The replaced incarnation: its id is no longer a member and the instance belongs to the new id.
    { name: 'the old id of a replaced instance', view: { memberIdOfInstance: 'm-new', instanceIdOfMember: undefined }, request: { memberId: 'm-old', groupInstanceId: 'i-a' }, errorCode: ERROR_CODES.FENCED_INSTANCE_ID },
    { name: 'an empty member id naming a held instance', view: { memberIdOfInstance: 'm-2', instanceIdOfMember: undefined }, request: { memberId: '', groupInstanceId: 'i-a' }, errorCode: ERROR_CODES.FENCED_INSTANCE_ID },
    { name: 'the member id of another instance', view: { memberIdOfInstance: 'm-2', instanceIdOfMember: 'i-b' }, request: { memberId: 'm-3', groupInstanceId: 'i-a' }, errorCode: ERROR_CODES.FENCED_INSTANCE_ID },
    { name: 'a member of another instance naming an unknown one', view: { memberIdOfInstance: undefined, instanceIdOfMember: 'i-b' }, request: { memberId: 'm-3', groupInstanceId: 'i-z' }, errorCode: ERROR_CODES.FENCED_INSTANCE_ID },
    { name: 'a dynamic member naming an instance', view: { memberIdOfInstance: undefined, instanceIdOfMember: null }, request: { memberId: 'm-1', groupInstanceId: 'i-z' }, errorCode: ERROR_CODES.FENCED_INSTANCE_ID },
    // An instance that expired or left: the client forgets its id and joins anew.
    { name: 'an unknown instance with an unknown member id', view: { memberIdOfInstance: undefined, instanceIdOfMember: undefined }, request: { memberId: 'm-old', groupInstanceId: 'i-a' }, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID },
    // Versions before KIP-345 carry no instance id, and a static member may send them.
    { name: 'a static member without its instance id', view: { memberIdOfInstance: undefined, instanceIdOfMember: 'i-a' }, request: { memberId: 'm-2', groupInstanceId: null }, errorCode: ERROR_CODES.NONE },
    { name: 'the old id of a replaced instance without its instance id', view: { memberIdOfInstance: undefined, instanceIdOfMember: undefined }, request: { memberId: 'm-old', groupInstanceId: null }, errorCode: ERROR_CODES.UNKNOWN_MEMBER_ID },
  ])('$name', ({ view, request, errorCode }) => {
    expect(memberIdentityErrorOf(view, request)).toBe(errorCode);
  });
});

describe('staticRejoinKeepsAssignment', () => {
  const subscription = (overrides: Partial<ConsumerProtocolSubscription> = {}): Uint8Array =>
    encodeConsumerProtocolSubscription({ version: 1, topics: ['orders', 'payments'], userData: null, ownedPartitions: [], generationId: -1, rackId: null, ...overrides });
  const consumer = (...entries: [string, Uint8Array][]): MemberProtocol[] => entries.map(([name, metadata]) => ({ name, metadata }));
  const before = consumer(['range', subscription()], ['roundrobin', subscription()]);

  // Each row proves when a restarted static member gets its stored assignment back without a rebalance:
  // a Stable group, the same protocols in the same order, each with the same topics and rack.
  it.each<{ name: string; groupState?: string; protocolType?: string; previous?: MemberProtocol[]; next: MemberProtocol[]; keeps: boolean }>([
    { name: 'the same protocols and subscriptions', next: consumer(['range', subscription()], ['roundrobin', subscription()]), keeps: true },
    {
      name: 'owned partitions, generation and user data lost by the restart',
      previous: consumer(['cooperative-sticky', subscription({ ownedPartitions: [{ topic: 'orders', partitions: [0, 2] }], generationId: 7, userData: new Uint8Array([1, 2]), version: 2 })]),
      next: consumer(['cooperative-sticky', subscription({ version: 2 })]),
      keeps: true,
    },
    { name: 'the same topics in another order', next: consumer(['range', subscription({ topics: ['payments', 'orders'] })], ['roundrobin', subscription()]), keeps: true },
    { name: 'another topic', next: consumer(['range', subscription({ topics: ['orders'] })], ['roundrobin', subscription({ topics: ['orders'] })]), keeps: false },
    { name: 'another rack', next: consumer(['range', subscription({ version: 3, rackId: 'eu-1b' })], ['roundrobin', subscription({ version: 3, rackId: 'eu-1b' })]), keeps: false },
    { name: 'the protocols in another order', next: consumer(['roundrobin', subscription()], ['range', subscription()]), keeps: false },
    { name: 'a protocol fewer', next: consumer(['range', subscription()]), keeps: false },
    { name: 'another protocol', next: consumer(['range', subscription()], ['sticky', subscription()]), keeps: false },
    { name: 'a group preparing a rebalance', groupState: 'PreparingRebalance', next: before, keeps: false },
    { name: 'a group completing a rebalance', groupState: 'CompletingRebalance', next: before, keeps: false },
    { name: 'consumer metadata that is not a subscription, unchanged', previous: consumer(['range', new Uint8Array([9])]), next: consumer(['range', new Uint8Array([9])]), keeps: true },
    { name: 'consumer metadata that is not a subscription, changed', previous: consumer(['range', new Uint8Array([9])]), next: consumer(['range', new Uint8Array([8])]), keeps: false },
    { name: 'opaque metadata of another protocol type, unchanged', protocolType: 'connect', previous: consumer(['default', new Uint8Array([1, 2])]), next: consumer(['default', new Uint8Array([1, 2])]), keeps: true },
    // Outside "consumer" the bytes are opaque: a subscription that differs only in owned partitions counts as changed.
    {
      name: 'opaque metadata of another protocol type, changed',
      protocolType: 'connect',
      previous: consumer(['default', subscription({ ownedPartitions: [{ topic: 'orders', partitions: [0] }] })]),
      next: consumer(['default', subscription()]),
      keeps: false,
    },
  ])('$name: $keeps', ({ groupState, protocolType, previous, next, keeps }) => {
    expect(staticRejoinKeepsAssignment({ groupState: groupState ?? 'Stable', protocolType: protocolType ?? 'consumer', previous: previous ?? before, next })).toBe(keeps);
  });
});

describe('joinCapRefusalOf', () => {
  const view = (overrides: Partial<JoinCapView>): JoinCapView => ({
    groupExists: true,
    groupCount: 5,
    emptyGroupCount: 0,
    groupsMax: 10,
    memberCount: 1,
    pendingMemberCount: 0,
    membersPerGroupMax: 3,
    ...overrides,
  });

  // Each row proves one bound at its edge: a group may reach its cap but not pass it, pending ids count
  // against the cap when ids are handed out, and a full coordinator makes room by dropping an Empty group.
  it.each<{ name: string; view: Partial<JoinCapView>; join: 'new-group-check' | 'hand-out-id' | 'add-member'; outcome: string }>([
    { name: 'a new group below the cap', view: { groupExists: false, groupCount: 9 }, join: 'new-group-check', outcome: 'admitted' },
    { name: 'a new group at the cap', view: { groupExists: false, groupCount: 10 }, join: 'new-group-check', outcome: 'coordinator-full' },
    { name: 'a new group at the cap with an Empty group to drop', view: { groupExists: false, groupCount: 10, emptyGroupCount: 1 }, join: 'new-group-check', outcome: 'admitted' },
    { name: 'an existing group at the coordinator cap', view: { groupExists: true, groupCount: 10 }, join: 'new-group-check', outcome: 'admitted' },
    { name: 'an id for the last place', view: { memberCount: 2 }, join: 'hand-out-id', outcome: 'admitted' },
    { name: 'an id with every place taken', view: { memberCount: 3 }, join: 'hand-out-id', outcome: 'group-full' },
    { name: 'an id with the last place promised to a joiner', view: { memberCount: 2, pendingMemberCount: 1 }, join: 'hand-out-id', outcome: 'group-full' },
    { name: 'the promised joiner taking the last place', view: { memberCount: 2, pendingMemberCount: 1 }, join: 'add-member', outcome: 'admitted' },
    { name: 'a member with every place taken', view: { memberCount: 3 }, join: 'add-member', outcome: 'group-full' },
    { name: 'a member into an empty group', view: { memberCount: 0 }, join: 'add-member', outcome: 'admitted' },
  ])('$name: $outcome', ({ view: overrides, join, outcome }) => {
    expect(joinCapRefusalOf(view(overrides), join)).toBe(outcome);
  });
});
