// jsforce's test/bulk2.test.ts (Bulk API 2.0). Its file tests read and write files of its test
// data; these stream CSV from memory. Its query of BigTable__c, a custom object of its test
// package, queries Account instead.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import jsforce from 'jsforce';
import { isObject, isString, withInvalidToken } from './checks.mjs';

let serial = 0;
const uniqueId = () => `${Date.now()}-${(serial += 1)}`;

const ensureSuccessfulBulkResults = (results, qty, operation) => {
  const { successfulResults, failedResults, unprocessedRecords } = results;
  assert.equal(successfulResults.length, qty);
  for (const result of successfulResults) {
    assert.ok(isString(result.sf__Id));
    assert.equal(result.sf__Created, operation === 'insert' ? 'true' : 'false');
  }
  assert.deepEqual(failedResults, []);
  assert.deepEqual(unprocessedRecords, []);
};

const insertAccounts = async (conn, id, qty = 20) => {
  const input = Array.from({ length: qty }, () => ({ Name: `Bulk Account ${id}` }));
  const results = await conn.bulk2.loadAndWaitForResults({ object: 'Account', operation: 'insert', input });
  ensureSuccessfulBulkResults(results, qty, 'insert');
  return results;
};

const assertEmpty = (results) => {
  assert.deepEqual(results.successfulResults, []);
  assert.deepEqual(results.failedResults, []);
  assert.deepEqual(results.unprocessedRecords, []);
};

const assertAllSaved = (rets, count) => {
  assert.equal(rets.length, count);
  for (const ret of rets) {
    assert.ok(isString(ret.id));
    assert.equal(ret.success, true);
  }
};

const assertUpdated = async (conn, id, count) => {
  const records = await conn.sobject('Account').find({ Name: { $like: `Bulk Account ${id}%` } }, 'Id, Name, BillingState');
  assert.equal(records.length, count);
  for (const record of records) {
    assert.ok(isString(record.Id));
    assert.ok(/\(Updated\)$/.test(record.Name));
    assert.equal(record.BillingState, null);
  }
};

const insertInCalifornia = async (conn, id, count) => {
  const input = Array.from({ length: count }, (_, i) => ({
    Name: `Bulk Account ${id} #${i + 1}`,
    BillingState: 'CA',
    NumberOfEmployees: 300 * (i + 1),
  }));
  const res = await conn.bulk2.loadAndWaitForResults({ object: 'Account', operation: 'insert', input });
  ensureSuccessfulBulkResults(res, count, 'insert');
};

const unmatched = { CreatedDate: { $lt: new jsforce.SfDate('1970-01-01T00:00:00Z') } };
const rename = { Name: '${Name} (Updated)', BillingState: null }; // eslint-disable-line no-template-curly-in-string
const bulkAccountNum = 250;
const smallAccountNum = 20;

export const tests = [
  ['should bulk insert records and return result status', async (conn) => {
    conn.bulk2.pollInterval = 50;
    const id = uniqueId();
    const input = [
      ...Array.from({ length: 200 }, (_, i) => ({ Name: `Bulk Account ${id}`, NumberOfEmployees: 300 * (i + 1) })),
      { BillingState: 'CA' }, // no Name: refused
    ];
    const { successfulResults, failedResults, unprocessedRecords } = await conn.bulk2.loadAndWaitForResults({
      object: 'Account',
      operation: 'insert',
      input,
    });
    assert.equal(successfulResults.length, 200);
    for (const result of successfulResults) {
      assert.ok(isString(result.sf__Id));
      assert.equal(result.sf__Created, 'true');
    }
    assert.equal(failedResults.length, 1);
    assert.equal(failedResults[0].sf__Id, '');
    assert.equal(failedResults[0].sf__Error, 'REQUIRED_FIELD_MISSING:Required fields are missing: [Name]:Name --');
    assert.deepEqual(unprocessedRecords, []);
  }],
  ['should bulk update and return updated status', async (conn) => {
    const id = uniqueId();
    await insertAccounts(conn, id);
    const records = await conn.sobject('Account').find({ Name: { $like: `Bulk Account ${id}%` } }, ['Id', 'Name']).execute();
    const input = records.map((rec) => ({ ...rec, Name: `${rec.Name} (Updated)` }));
    ensureSuccessfulBulkResults(await conn.bulk2.loadAndWaitForResults({ object: 'Account', operation: 'update', input }), 20, 'update');
  }],
  ['should bulk update with empty input and not raise client input error', async (conn) => {
    assertEmpty(await conn.bulk2.loadAndWaitForResults({ operation: 'insert', object: 'Account', input: [] }));
  }],
  ['should bulk delete and return deleted status', async (conn) => {
    const id = uniqueId();
    await insertAccounts(conn, id);
    const records = await conn.sobject('Account').find({ Name: { $like: `Bulk Account ${id}%` } }).execute();
    ensureSuccessfulBulkResults(await conn.bulk2.loadAndWaitForResults({ object: 'Account', operation: 'delete', input: records }), 20, 'delete');
  }],
  ['should bulk delete with empty input and not raise client input error', async (conn) => {
    assertEmpty(await conn.bulk2.loadAndWaitForResults({ operation: 'delete', object: 'Account', input: [] }));
  }],
  ['should bulk insert from file and return inserted results', async (conn) => {
    const rows = Array.from({ length: 100 }, (_, i) => `"Bulk Account from a file, #${i + 1}",${i * 10}`);
    const input = Readable.from([`Name,NumberOfEmployees\n${rows.join('\n')}\n`]);
    ensureSuccessfulBulkResults(await conn.bulk2.loadAndWaitForResults({ object: 'Account', operation: 'insert', input }), 100, 'insert');
  }],
  ['should bulk delete from file and return deleted results', async (conn) => {
    const id = uniqueId();
    await insertAccounts(conn, id);
    const records = await conn.sobject('Account').find({ Name: { $like: `Bulk Account ${id}%` } });
    const input = Readable.from([`Id\n${records.map((r) => r.Id).join('\n')}\n`]);
    ensureSuccessfulBulkResults(await conn.bulk2.loadAndWaitForResults({ object: 'Account', operation: 'delete', input }), 20, 'delete');
  }],
  ['should bulk query and get records', async (conn) => {
    const count = await conn.sobject('Account').count({});
    const records = await (await conn.bulk2.query('SELECT Id, Name FROM Account')).toArray();
    assert.equal(records.length, count);
    for (const rec of records) {
      assert.ok(isString(rec.Id));
      assert.ok(isString(rec.Name));
    }
  }],
  ['should call bulk api from invalid session conn with refresh fn, and return result', async (conn) => {
    const input = Array.from({ length: 100 }, (_, i) => ({ Name: `Session Expiry Test #${i}` }));
    const bulkInsert = await conn.bulk2.loadAndWaitForResults({ operation: 'insert', object: 'Account', input });
    const session = withInvalidToken(conn, { refresh: true });
    const conn2 = session.conn;
    const bulkDelete = await conn2.bulk2.loadAndWaitForResults({
      operation: 'delete',
      object: 'Account',
      input: bulkInsert.successfulResults.map((r) => ({ Id: r.sf__Id })),
    });
    assert.ok(session.refreshCalled);
    ensureSuccessfulBulkResults(bulkDelete, 100, 'delete');
  }],
  ['should call bulk api from invalid session conn without refresh fn, and raise error', async (conn) => {
    const conn3 = withInvalidToken(conn).conn;
    let raised = null;
    try {
      await conn3.bulk2.loadAndWaitForResults({ object: 'Account', operation: 'insert', input: [{ Name: 'Impossible Bulk Account #1' }] });
    } catch (error) {
      raised = error;
    }
    assert.ok(isObject(raised), 'nothing was raised');
    assert.equal(raised.name, 'INVALID_SESSION_ID');
  }],
  ['should bulk update using Query#update and return updated status', async (conn) => {
    const id = uniqueId();
    await insertInCalifornia(conn, id, bulkAccountNum);
    const rets = await conn.sobject('Account').find({ Name: { $like: `Bulk Account ${id}%` } }).update(rename, { bulkApiVersion: 2 });
    assertAllSaved(rets, bulkAccountNum);
    await assertUpdated(conn, id, bulkAccountNum);
  }],
  ['should bulk update using Query#update with unmatching query and return empty array records', async (conn) => {
    assert.deepEqual(await conn.sobject('Account').find(unmatched).update(rename, { bulkApiVersion: 2 }), []);
  }],
  ['should bulk delete using Query#destroy and return deleted status', async (conn) => {
    const id = uniqueId();
    await insertAccounts(conn, id, bulkAccountNum);
    const rets = await conn.sobject('Account').find({ Name: { $like: `Bulk Account ${id}%` } }).destroy({ bulkApiVersion: 2 });
    assertAllSaved(rets, bulkAccountNum);
  }],
  ['should bulk delete using Query#destroy with unmatching query and return empty array records', async (conn) => {
    assert.deepEqual(await conn.sobject('Account').find(unmatched).destroy({ bulkApiVersion: 2 }), []);
  }],
  ['should bulk update using Query#update with bulkThreshold modified and return updated status', async (conn) => {
    const id = uniqueId();
    await insertInCalifornia(conn, id, smallAccountNum);
    const rets = await conn
      .sobject('Account')
      .find({ Name: { $like: `Bulk Account ${id}%` } })
      .update(rename, { bulkThreshold: 0, bulkApiVersion: 2 });
    assertAllSaved(rets, smallAccountNum);
    await assertUpdated(conn, id, smallAccountNum);
  }],
  ['should bulk delete using Query#destroy with bulkThreshold modified and return deleted status', async (conn) => {
    const id = uniqueId();
    await insertAccounts(conn, id, smallAccountNum);
    const rets = await conn
      .sobject('Account')
      .find({ Name: { $like: `Bulk Account ${id}%` } })
      .destroy({ bulkThreshold: 0, bulkApiVersion: 2 });
    assertAllSaved(rets, smallAccountNum);
  }],
];
