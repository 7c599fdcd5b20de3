// jsforce's test/schema.test.ts. Most of it checks TypeScript types at compile time; what runs
// is its `query` test's calls, which these repeat, checking that each answers records (the
// types' runtime counterpart: the fields each record carries).
import assert from 'node:assert/strict';
import { isNumber, isObject, isString } from './checks.mjs';

const assertKeys = (record, keys) => {
  for (const key of keys) assert.ok(key in record, `no ${key} in ${JSON.stringify(record)}`);
};

export const tests = [
  ['standard schema: query', async (conn) => {
    const qr = await conn.query('SELECT Id, Name FROM Account');
    assert.ok(typeof qr.done === 'boolean' && Array.isArray(qr.records));

    const recs1 = await conn
      .sobject('Account')
      .find({ OwnerId: { $ne: null } })
      .sort('LastModifiedDate', 'DESC')
      .limit(10);
    assert.ok(recs1.length > 0 && recs1.length <= 10);
    assertKeys(recs1[0], ['Id', 'Name', 'OwnerId', 'LastModifiedDate', 'BillingAddress']);

    const recs2 = await conn
      .sobject('Account')
      .find(null, ['Id', 'Name', 'NumberOfEmployees'])
      .sort({ LastActivityDate: 'DESC' })
      .limit(10);
    assert.ok(recs2.length > 0);
    assertKeys(recs2[0], ['Id', 'Name', 'NumberOfEmployees']);

    const rec3 = await conn.sobject('Contact').findOne({ Email: 'abc@example.org' });
    assert.equal(rec3, null);

    const email = `schema${Date.now()}@jsforce.example`;
    await conn.sobject('Contact').create({
      LastName: 'Schema',
      Email: email,
      MailingStreet: '1 Market St',
      MailingCity: 'San Francisco',
    });
    const rec4 = await conn
      .sobject('Contact')
      .findOne({ Email: email }, ['Id', 'LastName', 'FirstName', 'Email', 'MailingAddress', 'CreatedDate']);
    assert.ok(isString(rec4.Id));
    assert.equal(rec4.LastName, 'Schema');
    assert.ok(isObject(rec4.MailingAddress));
    assert.equal(rec4.MailingAddress.city, 'San Francisco');
    assert.ok(isString(rec4.CreatedDate));

    const account = await conn.sobject('Account').create({ Name: 'Jsforce Schema', Type: 'Customer' });
    await conn.sobject('Task').create({ Subject: 'Jsforce open task', WhatId: account.id });
    const recs5 = await conn
      .sobject('Task')
      .select(['Id', 'Subject', 'ActivityDate', 'IsClosed', { Owner: ['Id', 'Username', 'Email'], What: ['Name'] }])
      .where({ IsClosed: false })
      .limit(10);
    assert.ok(recs5.length > 0);
    for (const rec of recs5) {
      assert.equal(rec.IsClosed, false);
      assert.ok(isString(rec.Owner.Id));
      assert.ok(rec.What === null || isString(rec.What.Name));
    }

    await conn.sobject('Task').create({ Subject: 'Jsforce done task', WhatId: account.id, Status: 'Completed' });
    const recs6 = await conn
      .sobject('Account')
      .find({ Type: ['Customer', 'Partner'] })
      .include('ActivityHistories')
      .select(['Id', 'Subject', 'ActivityDate', 'IsClosed', { Owner: ['Id', 'Username', 'Email'], What: ['Name'] }])
      .end();
    assert.ok(recs6.length > 0);
    for (const rec of recs6) {
      assert.ok(rec.ActivityHistories === null || isNumber(rec.ActivityHistories.totalSize));
    }
    const history = recs6.find((rec) => rec.Id === account.id).ActivityHistories.records;
    assert.deepEqual(
      history.map((h) => [h.Subject, h.IsClosed, h.What.Name, isString(h.Owner.Username)]),
      [['Jsforce done task', true, 'Jsforce Schema', true]],
    );

    const recs7 = await conn
      .sobject('Account')
      .find({ Name: { $like: 'J%' } }, ['Id', 'Name', { Owner: ['Id', 'Username'] }]);
    assert.ok(recs7.length > 0);
    assert.ok(recs7.every((r) => r.Name.startsWith('J') && isString(r.Owner.Username)));

    const cnt = await conn.sobject('Task').count({ IsClosed: false });
    assert.ok(isNumber(cnt) && cnt > 0);
  }],
];
