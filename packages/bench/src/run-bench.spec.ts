import { phaseCount } from './run-bench';

describe('phaseCount', () => {
  it.each<[string, Parameters<typeof phaseCount>[0], number]>([
    ['every group', ['append', 'pk', 'kafka', 'scan', 'tiering', 'failover', 'metadata'], 33],
    ['the default groups', ['append', 'pk', 'kafka', 'scan', 'tiering', 'failover'], 31],
    ['the tiering figures alone: load, their S3 baselines, catch-up, freshness series', ['tiering'], 5],
    ['the Kafka figures alone: their PUT and JetStream baselines, the floor write path, topic, produce, transactional produce, consume, GET baseline', ['kafka'], 9],
    ['the Kafka figures with the metadata stages, which share the JetStream baseline', ['kafka', 'metadata'], 11],
    ['the Kafka figures with the appends, whose PUT baselines and floor write path they share', ['append', 'kafka'], 13],
    ['the groups before the scan figures', ['append', 'pk', 'failover'], 14],
    ['the scan figures alone: load, compaction, GET baseline, three gateway formats and the client, long polls', ['scan'], 9],
    ['the metadata stages alone, with their JetStream baseline', ['metadata'], 4],
    ['the append figures and failover (the run before PK figures; the floor write path and three append scenarios)', ['append', 'failover'], 9],
    ['the PK figures alone', ['pk'], 9],
    ['the append figures alone', ['append'], 8],
    ['failover alone, which needs no baseline', ['failover'], 2],
  ])('counts the phases of %s', (_case, figures, expected) => {
    // Proves the "[n/count]" lines of a run end at n = count for every selection.
    expect(phaseCount(figures)).toBe(expected);
  });
});
