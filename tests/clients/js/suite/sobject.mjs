// jsforce's test/sobject.test.ts. Its org has opportunities on accounts; the org served here
// may have none, so the suite's first test makes a few (the only test not jsforce's).
import assert from 'node:assert/strict';
import { isBoolean, isNumber, isObject, isString, isUndefined } from './checks.mjs';

let acc;
let listviewId;

const assertLayouts = (res) => {
  assert.ok(Array.isArray(res.layouts));
  for (const layout of res.layouts) {
    assert.ok(layout.id === null || isString(layout.id));
    assert.ok(isObject(layout.buttonLayoutSection));
    assert.ok(Array.isArray(layout.detailLayoutSections));
    assert.ok(Array.isArray(layout.editLayoutSections));
    assert.ok(isObject(layout.quickActionList));
    assert.ok(Array.isArray(layout.quickActionList.quickActionListItems));
    assert.ok(Array.isArray(layout.relatedLists));
  }
  assert.ok(Array.isArray(res.recordTypeMappings));
  assert.ok(Array.isArray(res.recordTypeSelectorRequired));
};

const assertCompactLayouts = (res) => {
  assert.ok(Array.isArray(res.compactLayouts));
  for (const clayout of res.compactLayouts) {
    assert.ok(clayout.id === null || isString(clayout.id));
    assert.ok(isString(clayout.objectType));
    assert.ok(Array.isArray(clayout.actions));
    assert.ok(Array.isArray(clayout.fieldItems));
  }
  assert.ok(!res.defaultCompactLayoutId || isString(res.defaultCompactLayoutId));
  assert.ok(Array.isArray(res.recordTypeCompactLayoutMappings));
};

const assertApprovalLayouts = (res) => {
  assert.ok(Array.isArray(res.approvalLayouts));
  for (const alayout of res.approvalLayouts) {
    assert.ok(alayout.id === null || isString(alayout.id));
    assert.ok(isString(alayout.name));
    assert.ok(isString(alayout.label));
    assert.ok(Array.isArray(alayout.layoutItems));
  }
};

const assertColumns = (columns) => {
  assert.ok(Array.isArray(columns));
  for (const column of columns) {
    assert.ok(isString(column.label));
    assert.ok(isString(column.fieldNameOrPath));
    assert.ok(isString(column.selectListItem));
    assert.ok(isNumber(column.sortIndex) || column.sortIndex === null);
    assert.ok(isBoolean(column.sortable));
  }
};

// Ordered by `sortKeys`: each a [value of, descending].
const assertSorted = (records, sortKeys) => {
  for (let i = 0; i < records.length - 1; i++) {
    for (const [valueOf, descending] of sortKeys) {
      const [a, b] = [valueOf(records[i]), valueOf(records[i + 1])];
      if (a === b) continue;
      assert.ok(descending ? a > b : a < b, `${a} then ${b}`);
      break;
    }
  }
};

export const tests = [
  ['setup: opportunities on two accounts', async (conn) => {
    const accounts = await conn.sobject('Account').create([{ Name: 'Jsforce Alpha' }, { Name: 'Jsforce Beta' }]);
    const opportunities = ['2024-01-05', '2024-03-01', '2023-11-20'].map((CloseDate, i) => ({
      Name: `Jsforce Deal ${i}`,
      StageName: 'Prospecting',
      CloseDate,
      AccountId: accounts[i % 2].id,
    }));
    for (const ret of await conn.sobject('Opportunity').create(opportunities)) assert.ok(ret.success);
  }],
  ['find records and return records', async (conn) => {
    assert.ok(Array.isArray(await conn.sobject('Account').find()));
  }],
  ['find and return records with direct callback', async (conn) => {
    const records = await conn.sobject('Account').find({}, { Name: 1 });
    assert.ok(Array.isArray(records));
    acc = records[0];
  }],
  ['find with conditions', async (conn) => {
    const records = await conn.sobject('Account').find({ Name: { $like: `${acc.Name[0]}%` } }, { Name: 1 });
    assert.ok(Array.isArray(records));
    assert.ok(records.length > 0);
  }],
  ['find one record and return a record', async (conn) => {
    const record = await conn.sobject('Account').findOne({ Id: acc.Id });
    assert.ok(isObject(record));
    assert.ok(isString(record.Id));
  }],
  ['count records and return total size count', async (conn) => {
    const count = await conn.sobject('Account').count({ Name: { $like: `${acc.Name[0]}%` } });
    assert.ok(isNumber(count));
    assert.ok(count > 0);
  }],
  ['find records with sort option and return sorted records', async (conn) => {
    const records = await conn.sobject('Opportunity').find({}, { CloseDate: 1 }).sort('CloseDate', 'desc').exec();
    assert.ok(records.length > 0);
    assertSorted(records, [[(r) => r.CloseDate, true]]);
  }],
  ['find records with multiple sort options and return sorted records', async (conn) => {
    const records = await conn
      .sobject('Opportunity')
      .find({}, { 'Account.Name': 1, CloseDate: 1 })
      .sort('Account.Name -CloseDate')
      .exec();
    assert.ok(records.length > 0);
    assertSorted(records, [[(r) => r.Account.Name, false], [(r) => r.CloseDate, true]]);
  }],
  ['find records with multiple sort options and limit option and return sorted records', async (conn) => {
    const records = await conn
      .sobject('Opportunity')
      .find({}, { 'Owner.Name': 1, CloseDate: 1 })
      .sort({ 'Owner.Name': 1, CloseDate: -1 })
      .limit(10)
      .exec();
    assert.ok(records.length > 0 && records.length < 11);
    assertSorted(records, [[(r) => r.Owner.Name, false], [(r) => r.CloseDate, true]]);
  }],
  ['select records and return records', async (conn) => {
    const records = await conn.sobject('Opportunity').select('Id,Owner.Name,CloseDate').limit(10).exec();
    assert.ok(records.length > 0 && records.length < 11);
    for (const record of records) {
      assert.ok(isString(record.Id));
      assert.ok(isObject(record.Owner));
      assert.ok(isString(record.Owner.Name));
      assert.ok(isString(record.CloseDate));
    }
  }],
  ['select records with asterisk and return records', async (conn) => {
    const records = await conn.sobject('Opportunity').select('*, Account.*, Owner.Name').exec();
    assert.ok(Array.isArray(records));
    for (const record of records) {
      assert.ok(isString(record.Id));
      assert.ok(isString(record.Name));
      assert.ok(isString(record.CloseDate));
      assert.ok(isObject(record.Account));
      assert.ok(isString(record.Account.Name));
      assert.ok(isObject(record.Owner));
      assert.ok(isString(record.Owner.Name));
    }
  }],
  ['select records including child objects and return records with child records', async (conn) => {
    const records = await conn
      .sobject('Account')
      .find(null, 'Id')
      .include('Contacts')
      .select('*')
      .limit(2)
      .end()
      .include('Opportunities', null, 'Id, Name', { limit: 2 })
      .end()
      .limit(10)
      .exec();
    assert.ok(records.length > 0 && records.length < 11);
    for (const record of records) {
      assert.ok(isString(record.Id));
      assert.ok(isUndefined(record.Name));
      if (record.Contacts) {
        const crecords = record.Contacts.records;
        assert.ok(crecords.length > 0 && crecords.length < 3);
        for (const crecord of crecords) {
          assert.ok(isString(crecord.Id));
          assert.ok(isString(crecord.FirstName));
          assert.ok(isString(crecord.LastName));
        }
      }
      if (record.Opportunities) {
        const orecords = record.Opportunities.records;
        assert.ok(orecords.length > 0 && orecords.length < 3);
        for (const orecord of orecords) {
          assert.ok(isString(orecord.Id));
          assert.ok(isString(orecord.Name));
          assert.ok(isUndefined(orecord.CloseDate));
        }
      }
    }
  }],
  ['list layout for SObject and return Account layout information', async (conn) => {
    assertLayouts(await conn.sobject('Account').layouts());
  }],
  ['list layouts (cache-first) and return Account layout information', async (conn) => {
    assertLayouts(await conn.sobject('Account').layouts$());
  }],
  ['get cached layouts and return Account layout information immediately', async (conn) => {
    assertLayouts(conn.sobject('Account').layouts$$());
  }],
  ['list named layout for SObject and return User named layout information', async (conn) => {
    assertLayouts(await conn.sobject('User').layouts('UserAlt'));
  }],
  ['list named layouts (cache-first) and return User named layout information', async (conn) => {
    assertLayouts(await conn.sobject('User').layouts$('UserAlt'));
  }],
  ['get cached named layouts and return User named layout information immediately', async (conn) => {
    assertLayouts(conn.sobject('User').layouts$$('UserAlt'));
  }],
  ['list compact layout for SObject and return Account compact layout information', async (conn) => {
    assertCompactLayouts(await conn.sobject('Account').compactLayouts());
  }],
  ['list compact layouts (cache-first) and return Account compact layout information', async (conn) => {
    assertCompactLayouts(await conn.sobject('Account').compactLayouts$());
  }],
  ['get cached compact layouts and return Account compact layout information immediately', async (conn) => {
    assertCompactLayouts(conn.sobject('Account').compactLayouts$$());
  }],
  ['list approval layout for SObject and return Account approval layout information', async (conn) => {
    assertApprovalLayouts(await conn.sobject('Account').approvalLayouts());
  }],
  ['list approval layouts (cache-first) and return Account approval layout information', async (conn) => {
    assertApprovalLayouts(await conn.sobject('Account').approvalLayouts$());
  }],
  ['get cached approval layouts and return Account approval layout information immediately', async (conn) => {
    assertApprovalLayouts(conn.sobject('Account').approvalLayouts$$());
  }],
  ['listup list views and return list views definitions on the sobject', async (conn) => {
    const result = await conn.sobject('Account').listviews();
    assert.ok(isObject(result));
    assert.ok(Array.isArray(result.listviews) && result.listviews.length > 0);
    for (const listview of result.listviews) {
      assert.ok(isString(listview.id));
      assert.ok(isString(listview.label));
      assert.ok(isString(listview.describeUrl));
      assert.ok(isString(listview.resultsUrl));
      assert.ok(isBoolean(listview.soqlCompatible));
    }
    listviewId = result.listviews[0].id;
  }],
  ['describe list view and return described list view info for given list view id', async (conn) => {
    const result = await conn.sobject('Account').listview(listviewId).describe();
    assert.ok(isObject(result));
    assert.ok(isString(result.id));
    assert.ok(isString(result.sobjectType));
    assert.ok(isString(result.query) || result.query === null);
    assertColumns(result.columns);
    assert.ok(Array.isArray(result.orderBy));
  }],
  ['get result of list view and return executed result of list view for given list view id', async (conn) => {
    const result = await conn.sobject('Account').listview(listviewId).results();
    assert.ok(isObject(result));
    assert.ok(isBoolean(result.done));
    assert.ok(isNumber(result.size));
    assert.ok(isString(result.id));
    assert.ok(isString(result.label));
    assertColumns(result.columns);
    assert.ok(Array.isArray(result.records));
  }],
  ['explain query plan of list view and get explain result', async (conn) => {
    const result = await conn.sobject('Account').listview(listviewId).explain();
    assert.ok(Array.isArray(result.plans));
    for (const plan of result.plans) {
      assert.ok(isNumber(plan.cardinality));
      assert.ok(Array.isArray(plan.fields));
      assert.ok(isString(plan.leadingOperationType));
      assert.ok(isNumber(plan.relativeCost));
      assert.ok(isNumber(plan.sobjectCardinality));
      assert.ok(isString(plan.sobjectType));
    }
  }],
];
