// jsforce, unmodified, against a running localforce server; driven by tests/clients/test_jsforce.py.
// Usage: node scenario.mjs <base url>   (e.g. http://127.0.0.1:8000)
// Prints one JSON summary on stdout; the Python test asserts on it.
import jsforce from 'jsforce';

const loginUrl = process.argv[2];
if (!loginUrl) {
  console.error('usage: node scenario.mjs <localforce base url>');
  process.exit(2);
}
const version = '59.0';
const summary = {};

// SOAP login: jsforce posts to <loginUrl>/services/Soap/u/<version> and takes the instance URL
// from the response's serverUrl.
const soap = new jsforce.Connection({ loginUrl, version });
const soapUser = await soap.login('agent@example.com', 'password');
summary.soap = {
  instanceUrl: soap.instanceUrl,
  userId: soapUser.id,
  organizationId: soapUser.organizationId,
  hasToken: typeof soap.accessToken === 'string' && soap.accessToken.length > 0,
};

// OAuth 2.0 username-password flow; identity() follows the `id` URL of the token response.
const conn = new jsforce.Connection({
  oauth2: {
    loginUrl,
    clientId: 'localforce-client',
    clientSecret: 'localforce-secret',
    redirectUri: `${loginUrl}/callback`,
  },
  version,
});
const oauthUser = await conn.login('agent@example.com', 'password');
const identity = await conn.identity();
summary.oauth = {
  instanceUrl: conn.instanceUrl,
  userId: oauthUser.id,
  organizationId: oauthUser.organizationId,
  identity: {
    user_id: identity.user_id,
    organization_id: identity.organization_id,
    username: identity.username,
  },
};

// Query: autoFetch follows nextRecordsUrl; maxFetch stops early.
const all = await conn.query('SELECT Id FROM PricebookEntry', {
  autoFetch: true,
  maxFetch: 100000,
});
const capped = await conn.query('SELECT Id FROM PricebookEntry', {
  autoFetch: true,
  maxFetch: 2500,
});
const firstPage = await conn.query('SELECT Id FROM PricebookEntry');
const more = await conn.queryMore(firstPage.nextRecordsUrl);
summary.query = {
  totalSize: all.totalSize,
  fetched: all.records.length,
  unique: new Set(all.records.map((r) => r.Id)).size,
  done: all.done,
  cappedFetched: capped.records.length,
  firstPageSize: firstPage.records.length,
  firstPageDone: firstPage.done,
  hasNextRecordsUrl: typeof firstPage.nextRecordsUrl === 'string',
  moreSize: more.records.length,
};

// CRUD through the sobject API.
const contacts = conn.sobject('Contact');
const created = await contacts.create({ FirstName: 'Grace', LastName: 'Hopper' });
const retrieved = await contacts.retrieve(created.id);
const updated = await contacts.update({ Id: created.id, LastName: 'Murray Hopper' });
const afterUpdate = await contacts.retrieve(created.id);
const destroyed = await contacts.destroy(created.id);
let retrieveDeleted = null;
try {
  await contacts.retrieve(created.id);
} catch (error) {
  retrieveDeleted = error.errorCode ?? error.name;
}
summary.crud = {
  created: { success: created.success, idPrefix: created.id.slice(0, 3), idLength: created.id.length },
  retrievedName: retrieved.Name,
  updated: updated.success,
  updatedName: afterUpdate.Name,
  destroyed: destroyed.success,
  retrieveDeleted,
};

// Describe and describeGlobal.
const caseDescribe = await conn.sobject('Case').describe();
const global = await conn.describeGlobal();
summary.describe = {
  name: caseDescribe.name,
  keyPrefix: caseDescribe.keyPrefix,
  hasSubject: caseDescribe.fields.some((f) => f.name === 'Subject'),
  globalHas: ['Case', 'Contact', 'Product2', 'Knowledge__kav'].filter((n) =>
    global.sobjects.some((s) => s.name === n),
  ),
};

// SOSL search.
const found = await conn.search('FIND {racing} IN ALL FIELDS RETURNING Product2(Id, Name)');
summary.search = {
  count: found.searchRecords.length,
  types: [...new Set(found.searchRecords.map((r) => r.attributes.type))],
  named: found.searchRecords.every((r) => typeof r.Name === 'string' && r.Id.startsWith('01t')),
};

// An error surfaces Salesforce's errorCode.
try {
  await conn.query('SELECT Nope__c FROM Case');
  summary.error = null;
} catch (error) {
  summary.error = { errorCode: error.errorCode, name: error.name, message: error.message };
}

// Bulk API 2.0: an ingest job from records (jsforce writes the CSV), then a query job whose CSV
// jsforce parses back into records.
conn.bulk2.pollInterval = 50;
const loaded = await conn.bulk2.loadAndWaitForResults({
  object: 'Contact',
  operation: 'insert',
  input: [
    { LastName: 'Jsbulk One', Email: 'one@jsbulk.example' },
    { LastName: 'Jsbulk Two', Email: 'two@jsbulk.example' },
    { Email: 'nobody@jsbulk.example' },
  ],
});
const bulkQuery = await conn.bulk2.query(
  "SELECT Id, LastName, Email FROM Contact WHERE LastName LIKE 'Jsbulk%' ORDER BY LastName",
);
const queried = [];
for await (const record of bulkQuery) {
  queried.push(record);
}
summary.bulk2 = {
  successful: loaded.successfulResults.map((r) => [r.sf__Created, r.LastName]),
  failed: loaded.failedResults.map((r) => r.sf__Error),
  unprocessed: loaded.unprocessedRecords.length,
  queried: queried.map((r) => [r.LastName, r.Email]),
  idsMatch: queried.every((r) => loaded.successfulResults.some((s) => s.sf__Id === r.Id)),
};

// Bulk API 1.0: a CSV insert job (XML jobInfo, one batch), then a query job.
conn.bulk.pollInterval = 50;
const bulkLoaded = await conn.bulk.load('Contact', 'insert', [
  { LastName: 'Jsbulkone A', Email: 'a@jsbulkone.example' },
  { Email: 'nobody@jsbulkone.example' },
]);
const bulkOneQueried = [];
for await (const record of await conn.bulk.query(
  "SELECT Id, LastName FROM Contact WHERE LastName LIKE 'Jsbulkone%'",
)) {
  bulkOneQueried.push(record);
}
summary.bulk1 = {
  loaded: bulkLoaded.map((r) => [r.success, r.errors.length]),
  queried: bulkOneQueried.map((r) => [r.LastName, r.Id === bulkLoaded[0].id]),
};

// The SOAP API beyond login, on the SOAP session: getUserInfo, getServerTimestamp, a call
// localforce does not build (a fault naming it), then logout, after which the session is gone.
const userInfo = await soap.soap.getUserInfo();
const timestamp = await soap.soap.getServerTimestamp();
let describeTabs = null;
try {
  await soap.soap.describeTabs();
} catch (error) {
  describeTabs = { name: error.name, message: error.message };
}
const soapToken = soap.accessToken;
await soap.logout();
const afterLogout = new jsforce.Connection({ instanceUrl: loginUrl, accessToken: soapToken, version });
let queryAfterLogout = null;
try {
  await afterLogout.query('SELECT Id FROM Case LIMIT 1');
} catch (error) {
  queryAfterLogout = error.errorCode ?? error.name;
}
summary.soapCalls = {
  userId: userInfo.userId,
  organizationId: userInfo.organizationId,
  userName: userInfo.userName,
  timestamp: timestamp.timestamp,
  describeTabs,
  loggedOut: soap.accessToken === null || soap.accessToken === undefined,
  queryAfterLogout,
};

console.log(JSON.stringify(summary));
