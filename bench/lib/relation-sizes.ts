// Bytes on disk of every table of the schema (heap, TOAST, indexes; a partitioned table summed over
// its partitions), with its row count and its share per stored event: what a month of events costs
// and which relation costs it.
import postgres from 'postgres';

export interface RelationSize {
  relation: string;
  rows: number;
  totalBytes: number;
  heapBytes: number;
  /** TOAST (and the free-space and visibility maps): total - heap - indexes. */
  toastBytes: number;
  indexBytes: number;
  /** Bytes per row of webhook_events, the stored events. */
  totalPerEvent: number;
  heapPerEvent: number;
  indexPerEvent: number;
  /** Bytes per row of this relation. */
  totalPerRow: number;
}

export async function relationSizes(url: string): Promise<RelationSize[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    // pg_partition_tree lists a partitioned table's members (itself included) and nothing for a plain table.
    const tables = await sql<{ relation: string; total: string; heap: string; indexes: string }[]>`
      select c.relname as relation,
        sum(pg_total_relation_size(m.relid))::text as total,
        sum(pg_relation_size(m.relid))::text as heap,
        sum(pg_indexes_size(m.relid))::text as indexes
      from pg_class c cross join lateral (
        select relid from pg_partition_tree(c.oid) where c.relkind = 'p'
        union all select c.oid where c.relkind = 'r'
      ) as m
      where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
      group by c.relname order by sum(pg_total_relation_size(m.relid)) desc`;
    const counts = new Map<string, number>();
    for (const table of tables) {
      const [row] = await sql<{ n: string }[]>`select count(*)::text as n from ${sql(table.relation)}`;
      counts.set(table.relation, Number(row?.n ?? 0));
    }
    const events = Math.max(1, counts.get('webhook_events') ?? 1);
    return tables.map((table) => {
      const totalBytes = Number(table.total);
      const heapBytes = Number(table.heap);
      const indexBytes = Number(table.indexes);
      const rows = counts.get(table.relation) ?? 0;
      return {
        relation: table.relation,
        rows,
        totalBytes,
        heapBytes,
        toastBytes: totalBytes - heapBytes - indexBytes,
        indexBytes,
        totalPerEvent: Math.round(totalBytes / events),
        heapPerEvent: Math.round(heapBytes / events),
        indexPerEvent: Math.round(indexBytes / events),
        totalPerRow: rows === 0 ? 0 : Math.round(totalBytes / rows),
      };
    });
  } finally {
    await sql.end({ timeout: 5 });
  }
}
