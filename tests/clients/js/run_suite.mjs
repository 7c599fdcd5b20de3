// One suite of tests/clients/js/suite/, with jsforce unmodified, against a running localforce
// server; driven by tests/clients/test_jsforce_suites.py.
// Usage: node run_suite.mjs <base url> <suite name>
// Each suite repeats the calls of one of jsforce's own test files (which its CI runs against a
// real scratch org) and checks what those tests check. The suite's tests run in order and
// share state, as jsforce's do. Prints one JSON list: each test's title and its failure or null.
import jsforce from 'jsforce';

const [loginUrl, name] = process.argv.slice(2);
if (!loginUrl || !name) {
  console.error('usage: node run_suite.mjs <localforce base url> <suite name>');
  process.exit(2);
}
const conn = new jsforce.Connection({ loginUrl, version: '59.0' });
await conn.login('agent@example.com', 'password');
const { tests } = await import(`./suite/${name}.mjs`);
const results = [];
for (const [title, run] of tests) {
  try {
    await run(conn);
    results.push({ title, failure: null });
  } catch (error) {
    results.push({ title, failure: String(error?.stack ?? error) });
  }
}
console.log(JSON.stringify(results));
