// jsforce's test/bulk.test.ts (Bulk API 1.0). Its file tests read and write files of its test
// data; these stream the same CSV from memory. Its query of BigTable__c, a custom object of its
// test package, queries Account instead.
import assert from 'node:assert/strict';
import { Readable, Writable } from 'node:stream';
import jsforce from 'jsforce';
import { isObject, isString, withInvalidToken } from './checks.mjs';

const assertAllSaved = (rets, count) => {
  assert.ok(Array.isArray(rets));
  if (count !== undefined) assert.equal(rets.length, count);
  for (const ret of rets) {
    assert.ok(isString(ret.id));
    assert.equal(ret.success, true);
  }
};

const raises = async (promise, name) => {
  let raised = null;
  try {
    await promise;
  } catch (error) {
    raised = error;
  }
  assert.ok(isObject(raised), 'nothing was raised');
  assert.equal(raised.name, name);
};

// Loads a CSV through a batch's stream, as jsforce's file tests pipe a file into it.
const loadCsv = (conn, operation, csv) => {
  const batch = conn.bulk.load('Account', operation);
  Readable.from([csv]).pipe(batch.stream());
  return new Promise((resolve, reject) => {
    batch.on('response', resolve);
    batch.on('error', reject);
  });
};

// The accounts' names: this run's own, so that no other run's or suite's accounts match.
const run = `Bulk1 Account ${Date.now()}`;
const bulkAccountNum = 250;
const smallAccountNum = 20;
const newAccounts = (count) =>
  Array.from({ length: count }, (_, i) => ({
    Name: `New ${run} #${i + 1}`,
    BillingState: 'CA',
    NumberOfEmployees: 300 * (i + 1),
  }));
const unmatched = { CreatedDate: { $lt: new jsforce.SfDate('1970-01-01T00:00:00Z') } };

export const tests = [
  ['bulk insert records and return result status', async (conn) => {
    conn.bulk.pollInterval = 50;
    const records = [
      ...Array.from({ length: 200 }, (_, i) => ({ Name: `${run} #${i + 1}`, NumberOfEmployees: 300 * (i + 1) })),
      { BillingState: 'CA' }, // no Name: refused
    ];
    const rets = await conn.bulk.load('Account', 'insert', records);
    assertAllSaved(rets.slice(0, 200), 200);
    assert.equal(rets[200].id, null);
    assert.equal(rets[200].success, false);
  }],
  ['bulk update and return updated status', async (conn) => {
    const records = await conn.sobject('Account').find({ Name: { $like: `${run}%` } }, ['Id', 'Name']).execute();
    const rets = await conn.bulk.load('Account', 'update', records.map((rec) => ({ ...rec, Name: `${rec.Name} (Updated)` })));
    assertAllSaved(rets, 200);
  }],
  ['bulk update with empty input and raise client input error', async (conn) => {
    await raises(conn.bulk.load('Account', 'update', []), 'ClientInputError');
  }],
  ['bulk delete and return deleted status', async (conn) => {
    const records = await conn.sobject('Account').find({ Name: { $like: `${run}%` } }).execute();
    assertAllSaved(await conn.bulk.load('Account', 'delete', records), 200);
  }],
  ['bulk delete with empty input and raise client input error', async (conn) => {
    await raises(conn.bulk.load('Account', 'delete', []), 'ClientInputError');
  }],
  ['bulk insert from file and return inserted results', async (conn) => {
    const csv = `Name,NumberOfEmployees\n"${run}, from a file #1",10\n${run} from a file #2,20\n`;
    assertAllSaved(await loadCsv(conn, 'insert', csv), 2);
  }],
  ['bulk delete from file and return deleted results', async (conn) => {
    const records = await conn.sobject('Account').find({ Name: { $like: `${run}%` } });
    assert.equal(records.length, 2);
    const csv = `Id\n${records.map((r) => r.Id).join('\n')}\n`;
    assertAllSaved(await loadCsv(conn, 'delete', csv), 2);
  }],
  ['bulk query and get records with yielding file output', async (conn) => {
    const count = await conn.sobject('Account').count({});
    const chunks = [];
    const output = new Writable({
      write(chunk, _encoding, done) {
        chunks.push(chunk);
        done();
      },
    });
    // jsforce 3's bulk.query answers a promise of the parsable its test file's older API
    // returned at once.
    const parsable = await conn.bulk.query('SELECT Id, Name FROM Account');
    const records = await new Promise((resolve, reject) => {
      const recs = [];
      parsable
        .on('record', (rec) => recs.push(rec))
        .on('error', reject)
        .stream()
        .pipe(output)
        .on('finish', () => resolve(recs));
    });
    assert.equal(records.length, count);
    for (const rec of records) {
      assert.ok(isString(rec.Id));
      assert.ok(isString(rec.Name));
    }
    const data = Buffer.concat(chunks).toString('utf-8');
    const lines = data.replace(/[\r\n]+$/, '').split(/[\r\n]/);
    assert.equal(lines.length, records.length + 1);
  }],
  ['call bulk api from invalid session conn with refresh fn, and return result', async (conn) => {
    const accounts = Array.from({ length: 100 }, (_, i) => ({ Name: `Session Expiry Test #${i}` }));
    const insRets = await conn.bulk.load('Account', 'insert', accounts);
    const session = withInvalidToken(conn, { refresh: true });
    const conn2 = session.conn;
    const rets = await conn2.bulk.load('Account', 'delete', insRets.map((r) => ({ Id: r.id ?? undefined })));
    assert.ok(session.refreshCalled);
    assert.equal(rets.length, 100);
    for (const ret of rets) assert.ok(ret.success);
  }],
  ['call bulk api from invalid session conn without refresh fn, and raise error', async (conn) => {
    const conn3 = withInvalidToken(conn).conn;
    await raises(conn3.bulk.load('Account', 'insert', [{ Name: 'Impossible Bulk Account #1' }]), 'InvalidSessionId');
  }],
  ['bulk update using Query#update and return updated status', async (conn) => {
    await conn.bulk.load('Account', 'insert', newAccounts(bulkAccountNum));
    const rets = await conn
      .sobject('Account')
      .find({ Name: { $like: `New ${run}%` } })
      .update({ Name: '${Name} (Updated)', BillingState: null }); // eslint-disable-line no-template-curly-in-string
    assertAllSaved(rets, bulkAccountNum);
    const records = await conn.sobject('Account').find({ Name: { $like: `New ${run}%` } }, 'Id, Name, BillingState');
    assert.equal(records.length, bulkAccountNum);
    for (const record of records) {
      assert.ok(/\(Updated\)$/.test(record.Name));
      assert.equal(record.BillingState, null);
    }
  }],
  ['bulk update using Query#update with unmatching query and return empty array records', async (conn) => {
    const rets = await conn.sobject('Account').find(unmatched).update({ Name: '${Name} (Updated)', BillingState: null }); // eslint-disable-line no-template-curly-in-string
    assert.deepEqual(rets, []);
  }],
  ['bulk delete using Query#destroy and return deleted status', async (conn) => {
    assertAllSaved(await conn.sobject('Account').find({ Name: { $like: `New ${run}%` } }).destroy(), bulkAccountNum);
  }],
  ['bulk delete using Query#destroy with unmatching query and return empty array records', async (conn) => {
    assert.deepEqual(await conn.sobject('Account').find(unmatched).destroy(), []);
  }],
  ['bulk update using Query#update with bulkThreshold modified and return updated status', async (conn) => {
    await conn.bulk.load('Account', 'insert', newAccounts(smallAccountNum));
    const rets = await conn
      .sobject('Account')
      .find({ Name: { $like: `New ${run}%` } })
      .update({ Name: '${Name} (Updated)', BillingState: null }, { bulkThreshold: 0 }); // eslint-disable-line no-template-curly-in-string
    assertAllSaved(rets, smallAccountNum);
    const records = await conn.sobject('Account').find({ Name: { $like: `New ${run}%` } }, 'Id, Name, BillingState');
    assert.equal(records.length, smallAccountNum);
    for (const record of records) {
      assert.ok(/\(Updated\)$/.test(record.Name));
      assert.equal(record.BillingState, null);
    }
  }],
  ['bulk delete using Query#destroy with bulkThreshold modified and return deleted status', async (conn) => {
    assertAllSaved(await conn.sobject('Account').find({ Name: { $like: `New ${run}%` } }).destroy({ bulkThreshold: 0 }), smallAccountNum);
  }],
];
