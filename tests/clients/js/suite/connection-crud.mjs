// jsforce's test/connection-crud.test.ts. Its upsert tests use a custom object of its test
// package (UpsertTable__c with an external id field); these use Contact and its Email, which
// real orgs make an idLookup field, so upsert works by it as by an external id.
import assert from 'node:assert/strict';
import jsforce from 'jsforce';
import { isObject } from './checks.mjs';

let accountId;
let account;
let accountIds;
let accounts;
const extId = `upsert${Date.now()}@jsforce.example`;
let recId;

export const tests = [
  ['single: create account and get created obj', async (conn) => {
    const ret = await conn.sobject('Account').create({ Name: 'Hello' });
    assert.ok(ret.success);
    assert.ok(typeof ret.id === 'string');
    accountId = ret.id;
  }],
  ['single: retrieve account and return a record', async (conn) => {
    const record = await conn.sobject('Account').retrieve(accountId);
    assert.ok(typeof record.Id === 'string');
    assert.ok(isObject(record.attributes));
    account = record;
  }],
  ['single: update account, get successful result, and retrieve the updated record', async (conn) => {
    const ret = await conn.sobject('Account').record(account.Id).update({ Name: 'Hello2' });
    assert.ok(ret.success);
    const record = await conn.sobject('Account').record(accountId).retrieve();
    assert.equal(record.Name, 'Hello2');
    assert.ok(isObject(record.attributes));
  }],
  ['single: update account with options headers, get successful result, and retrieve the updated record', async (conn) => {
    const options = { headers: { 'SForce-Auto-Assign': 'FALSE' } };
    const ret = await conn.sobject('Account').record(account.Id).update({ Name: 'Hello3' }, options);
    assert.ok(ret.success);
    const record = await conn.sobject('Account').record(accountId).retrieve(options);
    assert.equal(record.Name, 'Hello3');
    assert.ok(isObject(record.attributes));
  }],
  ['multiple: create multiple accounts and get successful results', async (conn) => {
    const rets = await conn.sobject('Account').create([{ Name: 'Account #1' }, { Name: 'Account #2' }]);
    assert.ok(Array.isArray(rets));
    for (const ret of rets) {
      assert.ok(ret.success);
      assert.ok(typeof ret.id === 'string');
    }
    accountIds = rets.map(({ id }) => id);
  }],
  ['multiple: retrieve multiple accounts and get specified records', async (conn) => {
    const records = await conn.sobject('Account').retrieve(accountIds);
    assert.ok(Array.isArray(records));
    records.forEach((record, i) => {
      assert.ok(typeof record.Id === 'string');
      assert.ok(isObject(record.attributes));
      assert.equal(record.Name, `Account #${i + 1}`);
    });
    accounts = records;
  }],
  ['multiple: update multiple accounts, get successful results, and get updated records', async (conn) => {
    const rets = await conn
      .sobject('Account')
      .update(accounts.map(({ Id, Name }) => ({ Id, Name: `Updated ${Name}` })));
    assert.ok(Array.isArray(rets));
    for (const ret of rets) assert.ok(ret.success);
    const records = await conn.sobject('Account').retrieve(accountIds);
    records.forEach((record, i) => {
      assert.equal(record.Name, `Updated Account #${i + 1}`);
      assert.ok(isObject(record.attributes));
    });
  }],
  ['multiple: delete multiple accounts, get successful results, and not get any records', async (conn) => {
    const rets = await conn.sobject('Account').destroy(accountIds);
    assert.ok(Array.isArray(rets));
    for (const ret of rets) assert.ok(ret.success);
    const records = await conn.sobject('Account').retrieve(accountIds);
    for (const record of records) assert.equal(record, null);
  }],
  ['upsert: upsert not existing record and get successful result', async (conn) => {
    const ret = await conn.sobject('Contact').upsert({ LastName: 'New Record', Email: extId }, 'Email');
    assert.ok(ret.success);
    assert.ok(typeof ret.id === 'string');
    recId = ret.id;
  }],
  // jsforce's test expects no id: the 204 that API versions before 46.0 answer an upsert that
  // updates. From 46.0 a real org answers 200 with the id and `created: false` (the REST API
  // Developer Guide), so this checks both, at 45.0 and at the suite's 59.0.
  ['upsert: upsert already existing record, get successful result, and get updated record', async (conn) => {
    const old = new jsforce.Connection({ instanceUrl: conn.instanceUrl, accessToken: conn.accessToken, version: '45.0' });
    const ret = await old.sobject('Contact').upsert({ LastName: 'Updated Record', Email: extId }, 'Email');
    assert.ok(ret.success);
    assert.ok(typeof ret.id === 'undefined');
    const record = await conn.sobject('Contact').retrieve(recId);
    assert.equal(record.LastName, 'Updated Record');
    const now = await conn.sobject('Contact').upsert({ Title: 'Updated Again', Email: extId }, 'Email');
    assert.deepEqual(now, { id: recId, success: true, errors: [], created: false });
  }],
  ['upsert: upsert duplicated external id record and get multiple choices error', async (conn) => {
    await conn.sobject('Contact').create({ LastName: 'Duplicated Record', Email: extId });
    let raised = null;
    try {
      await conn.sobject('Contact').upsert({ LastName: 'Updated Record, Twice', Email: extId }, 'Email');
    } catch (error) {
      raised = error;
    }
    assert.ok(raised !== null, 'the upsert succeeded');
    assert.equal(raised.name, 'MULTIPLE_CHOICES');
    assert.ok(Array.isArray(raised.content));
    assert.ok(typeof raised.content[0] === 'string');
  }],
];
