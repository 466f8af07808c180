// The one writer of operator_actions (src/db/audit.ts): rows at the caller's time, in the caller's
// transaction, checked before anything is written; and no other module of src/ inserts into the table.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type OperatorAction, recordOperatorActions } from '../src/db/audit.ts';
import { useTestDatabase } from './helpers/database.ts';

const { db, sql } = await useTestDatabase();

const at = new Date('2026-03-04T05:06:07.089Z');
const retry = (target: string): OperatorAction => ({
  operator: 'ada',
  action: 'retry',
  targetKind: 'outbox',
  target,
  beforeStatus: 'dead',
  afterStatus: 'pending',
});

const rowsOf = (target: string) =>
  sql`select operator, action, target_kind::text as target_kind, target, before_status, after_status, at
    from operator_actions where target = ${target}`;

describe('recordOperatorActions', () => {
  it("writes one row per action at the caller's time, not the database's", async () => {
    await recordOperatorActions(db, at, [retry('audit-one'), { ...retry('audit-one'), operator: 'grace' }]);
    const rows = await rowsOf('audit-one');
    expect(rows).toHaveLength(2);
    expect(rows.map((row) => row.at)).toEqual([at, at]);
    expect(rows[0]).toMatchObject({
      action: 'retry',
      target_kind: 'outbox',
      before_status: 'dead',
      after_status: 'pending',
    });
  });

  it('refuses an unknown action or a name the audit cannot hold, and writes nothing of the batch', async () => {
    const unknown = { ...retry('audit-two'), action: 'delete' } as unknown as OperatorAction;
    await expect(recordOperatorActions(db, at, [retry('audit-two'), unknown])).rejects.toThrow();
    await expect(recordOperatorActions(db, at, [{ ...retry('audit-two'), operator: 'ada\nforged' }])).rejects.toThrow();
    await expect(recordOperatorActions(db, at, [{ ...retry('audit-two'), target: '' }])).rejects.toThrow();
    expect(await rowsOf('audit-two')).toEqual([]);
  });

  it("rolls back with the caller's transaction", async () => {
    await expect(
      db.transaction(async (tx) => {
        await recordOperatorActions(tx, at, [retry('audit-three')]);
        throw new Error('the change it records failed');
      }),
    ).rejects.toThrow('the change it records failed');
    expect(await rowsOf('audit-three')).toEqual([]);
  });

  it('is the only writer of operator_actions in src/', () => {
    const files = (readdirSync('src', { recursive: true }) as string[])
      .filter((file) => /\.tsx?$/.test(file))
      .map((file) => join('src', file));
    const writers = files.filter((file) =>
      /insert\(operatorActions\)|insert into operator_actions/i.test(readFileSync(file, 'utf8')),
    );
    expect(writers).toEqual(['src/db/audit.ts']);
  });
});
