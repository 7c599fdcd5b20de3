// jsforce's test/tooling.test.ts: the Tooling API's describes and a record of it.
// Left out: its Apex tests (executeAnonymous, runTestsSynchronous/Asynchronous, completions),
// which need an Apex runtime localforce does not have; the last test checks the error that
// says so instead. And its StaticResource tests, which create Tooling records (the Tooling
// API's writes are not built yet); its runTests tests also need jsforce's test package.
import assert from 'node:assert/strict';
import { isNumber, isObject, isString } from './checks.mjs';

export const tests = [
  ['should describe global', async (conn) => {
    const res = await conn.tooling.describeGlobal();
    assert.ok(isString(res.encoding));
    assert.ok(isNumber(res.maxBatchSize));
    assert.ok(Array.isArray(res.sobjects));
    const names = res.sobjects.map((so) => so.name);
    for (const name of ['ApexClass', 'EntityDefinition', 'FieldDefinition']) {
      assert.ok(names.includes(name), `no ${name} in ${names}`);
    }
  }],
  ['should describe tooling sobject', async (conn) => {
    const so = await conn.tooling.sobject('ApexClass').describe();
    assert.ok(isString(so.name));
    assert.ok(isString(so.label));
    assert.ok(Array.isArray(so.fields));
  }],
  ['should find tooling sobject record', async (conn) => {
    const rec = await conn.tooling.sobject('ApexClass').findOne();
    if (rec) {
      assert.ok(isString(rec.Id));
    }
    const entity = await conn.tooling
      .sobject('EntityDefinition')
      .findOne({ QualifiedApiName: 'Account' }, ['DurableId', 'KeyPrefix']);
    assert.equal(entity.DurableId, 'Account');
    assert.equal(entity.KeyPrefix, '001');
    const fields = await conn.tooling.query(
      "SELECT QualifiedApiName, DataType FROM FieldDefinition WHERE EntityDefinitionId = 'Account'",
    );
    assert.ok(fields.records.some((f) => f.QualifiedApiName === 'Name' && f.DataType === 'Name'));
    const retrieved = await conn.tooling.retrieve('EntityDefinition', 'Account');
    assert.equal(retrieved.QualifiedApiName, 'Account');
  }],
  ['should refuse to execute anonymous apex, naming what is missing', async (conn) => {
    await assert.rejects(conn.tooling.executeAnonymous("System.debug('Hello, World');"), (error) => {
      assert.equal(error.errorCode, 'FUNCTIONALITY_NOT_ENABLED');
      assert.match(error.message, /no Apex runtime/);
      return true;
    });
  }],
];
