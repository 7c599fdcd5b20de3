// jsforce's test/tooling.test.ts: the Tooling API's describes and a record of it, and its four
// StaticResource tests (created from JSON, from multipart/form-data with a Buffer and with a
// base64 string, and its body downloaded). Their zip is built here (jsforce reads its
// test/data/test.zip), and each run names its resources after the clock, as jsforce's do.
// Left out: its Apex tests (executeAnonymous, runTestsSynchronous/Asynchronous, completions),
// which need an Apex runtime localforce does not have; the last test checks the error that
// says so instead. Its runTests tests also need jsforce's test package.
//
// The download test's last check is the real behaviour, not the original's. jsforce asserts
// that the text `conn.tooling.request(record.Body)` gives equals the base64 it uploaded. A real
// org answers a blob's URL with the raw bytes: "Document body content is returned in binary
// form. The response content type isn't JSON or XML since the returned data is binary"
// (REST API Developer Guide, "Get Blob Data"; "sObject Blob Get": "returns it as binary
// data"). jsforce reads a body that is not JSON, XML or CSV as text: http-api.js's
// parseResponseBody takes parseText, and request-helper.js reads the stream with
// util/stream.js's readAll, which decodes the bytes as UTF-8 (no request sets another
// encoding). So against a real org the text is the zip's bytes decoded as UTF-8, never its
// base64 (a zip is not UTF-8: its bytes become U+FFFD), and the original assertion cannot
// hold; this one checks what a real org gives, and that the bytes themselves come back whole.
import assert from 'node:assert/strict';
import { isNumber, isObject, isString } from './checks.mjs';

// A zip of one file, hello.txt ("hello, world\n"): bytes that are not UTF-8 text.
const ZIP = Buffer.from(
  'UEsDBBQAAAAAAAAAIVhTdCT0DQAAAA0AAAAJAAAAaGVsbG8udHh0aGVsbG8sIHdvcmxkClBLAQIUAxQAAAAAAAAAIVhT'
    + 'dCT0DQAAAA0AAAAJAAAAAAAAAAAAAACAAQAAAABoZWxsby50eHRQSwUGAAAAAAEAAQA3AAAANAAAAAAA',
  'base64',
);
const MULTIPART = {
  multipartFileFields: { Body: { contentType: 'application/zip', filename: 'test.zip' } },
};
let resources = 0;

function createStaticResourceRequest(body) {
  resources += 1;
  return {
    ContentType: 'application/zip',
    CacheControl: 'Private',
    Name: `TestZip_${Date.now()}_${resources}`,
    Body: body,
  };
}

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
  ['can create static resource using application/json content type', async (conn) => {
    const request = createStaticResourceRequest(ZIP.toString('base64'));
    const record = await conn.tooling.create('StaticResource', request);
    assert.ok(record.success);
  }],
  ['can create static resource using multipart/form-data content type with a buffer', async (conn) => {
    const request = createStaticResourceRequest(ZIP);
    const record = await conn.tooling.create('StaticResource', request, MULTIPART);
    assert.ok(record.success);
    const stored = await conn.tooling.retrieve('StaticResource', record.id);
    assert.equal(stored.BodyLength, ZIP.length);
  }],
  ['can create static resource using multipart/form-data content type with a base64 encoded string', async (conn) => {
    const request = createStaticResourceRequest(ZIP.toString('base64'));
    const record = await conn.tooling.create('StaticResource', request, MULTIPART);
    assert.ok(record.success);
    const stored = await conn.tooling.retrieve('StaticResource', record.id);
    assert.equal(stored.BodyLength, ZIP.length);
  }],
  ['can download a static resource binary blob and properly interpret the results', async (conn) => {
    const base64bytes = ZIP.toString('base64');
    const request = createStaticResourceRequest(base64bytes);
    const result = await conn.tooling.create('StaticResource', request);
    assert.ok(result.success);

    const record = await conn.tooling.retrieve('StaticResource', result.id);
    assert.ok(isString(record.Body));
    assert.equal(record.Body, `/services/data/v${conn.version}/tooling/sobjects/StaticResource/${result.id}/Body`);

    const response = await conn.tooling.request(record.Body);
    // The bytes as jsforce decodes a body that is not JSON (see the header), not the base64.
    assert.equal(response, ZIP.toString('utf-8'));
    assert.notEqual(response, base64bytes);
    // The bytes themselves, read without decoding, are the zip's.
    const raw = await fetch(`${conn.instanceUrl}${record.Body}`, {
      headers: { Authorization: `Bearer ${conn.accessToken}` },
    });
    assert.equal(raw.status, 200);
    assert.ok(Buffer.from(await raw.arrayBuffer()).equals(ZIP));
  }],
];
