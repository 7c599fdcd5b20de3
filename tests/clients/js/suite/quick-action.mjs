// jsforce's test/quick-action.test.ts.
import assert from 'node:assert/strict';
import { isMapObject, isObject, isString } from './checks.mjs';

let action;

const withAccount = async (conn, use) => {
  const ret = await conn.sobject('Account').create({ Name: 'JSforce QuickAction Test' });
  assert.ok(ret.success);
  try {
    await use(ret.id);
  } finally {
    await conn.sobject('Account').destroy(ret.id);
  }
};

const assertAction = (result) => {
  assert.ok(isString(result.type));
  assert.ok(isString(result.name));
  assert.ok(isString(result.label));
  assert.ok(isObject(result.urls));
};

export const tests = [
  ['list global actions and return global actions', async (conn) => {
    const results = await conn.quickActions();
    assert.ok(Array.isArray(results));
    results.forEach(assertAction);
  }],
  ['list sobject actions and return global actions', async (conn) => {
    const results = await conn.sobject('Account').quickActions();
    assert.ok(Array.isArray(results));
    results.forEach(assertAction);
  }],
  ['describe global action info and return global actions', async (conn) => {
    action = conn.quickAction('LogACall');
    const res = await action.describe();
    assert.ok(isObject(res));
    assertAction(res);
    assert.ok(isObject(res.layout));
    assert.equal(res.targetSobjectType, 'Task');
  }],
  ['get default values of the action and return default field values', async () => {
    const res = await action.defaultValues();
    assert.ok(isMapObject(res));
    assert.equal(res.Description, null);
    assert.equal(res.WhoId, null);
    assert.equal(res.WhatId, null);
  }],
  ['get default values of the action for an account record and return default values', async (conn) => {
    await withAccount(conn, async (accId) => {
      const res = await action.defaultValues(accId);
      assert.ok(isMapObject(res));
      assert.equal(res.Description, null);
      assert.equal(res.WhoId, null);
      assert.equal(res.WhatId, accId);
    });
  }],
  ['execute action for record', async (conn) => {
    await withAccount(conn, async (accId) => {
      const res = await action.execute(accId, { Subject: 'My Task Test', Description: 'This is the task' });
      assert.ok(isObject(res));
      assert.equal(res.success, true);
      assert.equal(res.created, true);
      assert.ok(isString(res.id));
      assert.ok(Array.isArray(res.feedItemIds));
      assert.equal(res.contextId, accId);
    });
  }],
];
