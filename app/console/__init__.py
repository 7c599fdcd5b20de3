"""The web console under /console: the org's records, a SOQL and SOSL runner, sandboxes and
episodes (their call logs and diffs), task results, and the coverage page. Server-rendered
templates with htmx shipped beside them: nothing is fetched from the internet."""
