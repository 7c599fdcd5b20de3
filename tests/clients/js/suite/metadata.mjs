// jsforce's test/metadata.test.ts: its CRUD tests on custom objects (create, read, update,
// upsert, rename, list, delete) and its session refresh; then the same calls on custom fields,
// and a read of the org's own custom objects. Left out for good: its deploy,
// deployRecentValidation and retrieve tests, which need jsforce's test package (a zip of Apex
// classes and triggers, which there is no Apex runtime here to compile).
import assert from 'node:assert/strict';
import { isObject, isString, withInvalidToken } from './checks.mjs';

const objects = [
  {
    fullName: 'JSforceTestObjectSync1__c',
    label: 'Test Object Sync 1',
    pluralLabel: 'Test Object Sync 1',
    nameField: { type: 'Text', label: 'Test Object Name' },
    deploymentStatus: 'Deployed',
    sharingModel: 'ReadWrite',
  },
  {
    fullName: 'JSforceTestObjectSync2__c',
    label: 'Test Object Sync 2',
    pluralLabel: 'Test Object 2',
    nameField: { type: 'AutoNumber', label: 'Test Object #' },
    deploymentStatus: 'InDevelopment',
    sharingModel: 'Private',
  },
];
let fullNames = objects.map((meta) => meta.fullName);
let rmetadata = null;

export const tests = [
  ['should create metadata synchronously and create custom objects', async (conn) => {
    conn.version = '45.0';
    const results = await conn.metadata.create('CustomObject', objects);
    assert.ok(Array.isArray(results));
    assert.ok(results.length === objects.length);
    for (const result of results) {
      assert.ok(result.success === true, JSON.stringify(result));
      assert.ok(isString(result.fullName));
    }
  }],
  ['should read metadata synchronously and return custom objects metadata', async (conn) => {
    const results = await conn.metadata.read('CustomObject', fullNames);
    assert.ok(Array.isArray(results));
    assert.ok(results.length === fullNames.length);
    for (const result of results) {
      assert.ok(isString(result.fullName));
      assert.ok(isObject(result.nameField));
      assert.ok(isString(result.nameField.label));
    }
    rmetadata = results;
  }],
  ['should update metadata synchronously return updated custom object metadata', async (conn) => {
    rmetadata[0].label = 'Updated Test Object Sync 2';
    rmetadata[1].deploymentStatus = 'Deployed';
    const results = await conn.metadata.update('CustomObject', rmetadata);
    assert.ok(Array.isArray(results));
    assert.ok(results.length === fullNames.length);
    for (const result of results) {
      assert.ok(result.success === true, JSON.stringify(result));
      assert.ok(isString(result.fullName));
    }
    const described = await conn.sobject('JSforceTestObjectSync1__c').describe();
    assert.equal(described.label, 'Updated Test Object Sync 2');
  }],
  ['should upsert metadata synchronously and upsert custom objects', async (conn) => {
    const umetadata = [
      {
        fullName: 'JSforceTestObjectSync2__c',
        label: 'Upserted Object Sync 2',
        pluralLabel: 'Upserted Object Sync 2',
        nameField: { type: 'Text', label: 'Test Object Name' },
        deploymentStatus: 'Deployed',
        sharingModel: 'ReadWrite',
      },
      {
        fullName: 'JSforceTestObjectSync3__c',
        label: 'Upserted Object Sync 3',
        pluralLabel: 'Upserted Object Sync 3',
        nameField: { type: 'Text', label: 'Test Object Name' },
        deploymentStatus: 'Deployed',
        sharingModel: 'ReadWrite',
      },
    ];
    const results = await conn.metadata.upsert('CustomObject', umetadata);
    assert.ok(Array.isArray(results));
    assert.ok(results.length === umetadata.length);
    for (const [i, result] of results.entries()) {
      assert.ok(result.success === true, JSON.stringify(result));
      assert.ok(result.created === (result.fullName === 'JSforceTestObjectSync3__c'));
      assert.ok(result.fullName === umetadata[i].fullName);
    }
  }],
  ['should rename metadata synchronously and rename a custom object', async (conn) => {
    const oldName = fullNames[0];
    const newName = oldName.replace(/__c$/, 'Updated__c');
    const result = await conn.metadata.rename('CustomObject', oldName, newName);
    assert.ok(result.success === true, JSON.stringify(result));
    assert.ok(isString(result.fullName));
    assert.ok(result.fullName === oldName);
    const co = await conn.metadata.read('CustomObject', newName);
    assert.ok(isString(co.fullName));
    assert.ok(co.fullName === newName);
  }],
  ['should list metadata synchronously and list custom objects', async (conn) => {
    const results = await conn.metadata.list({ type: 'CustomObject' });
    assert.ok(Array.isArray(results));
    for (const result of results) {
      assert.ok(result.type === 'CustomObject');
      assert.ok(isString(result.id));
      assert.ok(isString(result.fullName));
    }
    fullNames = results
      .filter((m) => m.fullName.match(/^JSforceTestObject.+__c$/))
      .map((m) => m.fullName);
    assert.equal(fullNames.length, 3);
  }],
  ['should delete metadata synchronously and delete custom objects', async (conn) => {
    const results = await conn.metadata.delete('CustomObject', fullNames);
    assert.ok(Array.isArray(results));
    assert.ok(results.length === fullNames.length);
    for (const result of results) {
      assert.ok(result.success === true, JSON.stringify(result));
      assert.ok(isString(result.fullName));
    }
  }],
  ["should read the org's own custom objects' metadata", async (conn) => {
    const listed = await conn.metadata.list({ type: 'CustomObject' });
    const fullNames = listed.filter((m) => m.fullName.endsWith('__c')).map((m) => m.fullName);
    assert.ok(fullNames.length > 0);
    const results = await conn.metadata.read('CustomObject', fullNames);
    assert.ok(Array.isArray(results));
    assert.ok(results.length === fullNames.length);
    for (const result of results) {
      assert.ok(isString(result.fullName));
      assert.ok(isObject(result.nameField));
      assert.ok(isString(result.nameField.label));
    }
  }],
  ['custom fields: create, read, update, upsert, list and delete', async (conn) => {
    const fields = [
      { fullName: 'Account.JSforceTestSync1__c', label: 'Test Field Sync 1', type: 'Text', length: 80 },
      { fullName: 'Account.JSforceTestSync2__c', label: 'Test Field Sync 2', type: 'Number', precision: 10, scale: 2 },
    ];
    const created = await conn.metadata.create('CustomField', fields);
    assert.ok(created.every((r) => r.success === true), JSON.stringify(created));
    const read = await conn.metadata.read('CustomField', fields.map((f) => f.fullName));
    assert.deepEqual(read.map((r) => r.label), ['Test Field Sync 1', 'Test Field Sync 2']);
    read[0].label = 'Updated Test Field Sync 1';
    const updated = await conn.metadata.update('CustomField', read);
    assert.ok(updated.every((r) => r.success === true), JSON.stringify(updated));
    const described = await conn.sobject('Account').describe();
    assert.equal(described.fields.find((f) => f.name === 'JSforceTestSync1__c').label, 'Updated Test Field Sync 1');
    const upserted = await conn.metadata.upsert('CustomField', [
      { ...fields[1], label: 'Upserted Field Sync 2' },
      { fullName: 'Account.JSforceTestSync3__c', label: 'Upserted Field Sync 3', type: 'Checkbox', defaultValue: 'false' },
    ]);
    assert.deepEqual(upserted.map((r) => [r.success, r.created]), [[true, false], [true, true]]);
    const listed = await conn.metadata.list({ type: 'CustomField' });
    const ours = listed.filter((m) => m.fullName.startsWith('Account.JSforceTest')).map((m) => m.fullName);
    assert.equal(ours.length, 3);
    const deleted = await conn.metadata.delete('CustomField', ours);
    assert.ok(deleted.every((r) => r.success === true), JSON.stringify(deleted));
    const after = await conn.sobject('Account').describe();
    assert.ok(!after.fields.some((f) => f.name.startsWith('JSforceTest')));
  }],
  ['should refresh metadata API session and list metadata even if the session has been expired', async (conn) => {
    const state = withInvalidToken(conn, { refresh: true });
    const results = await state.conn.metadata.list({ type: 'CustomObject' });
    assert.ok(state.refreshCalled);
    assert.ok(Array.isArray(results));
  }],
];
