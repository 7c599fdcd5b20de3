import jsforce from 'jsforce';

// The kind checks jsforce's tests make of values.
export const isObject = (value) => value !== null && typeof value === 'object';
export const isString = (value) => typeof value === 'string';
export const isNumber = (value) => typeof value === 'number';
export const isBoolean = (value) => typeof value === 'boolean';
export const isUndefined = (value) => value === undefined;
export const isMapObject = (value) => isObject(value) && !Array.isArray(value);

// A connection whose access token the server does not know, as jsforce's session tests make:
// with `refresh`, its refresh function hands it `conn`'s token (and notes that it was called).
export const withInvalidToken = (conn, { refresh = false } = {}) => {
  const state = { refreshCalled: false };
  const refreshFn = (_c, callback) => {
    state.refreshCalled = true;
    setTimeout(() => callback(null, conn.accessToken ?? undefined), 50);
  };
  state.conn = new jsforce.Connection({
    instanceUrl: conn.instanceUrl,
    accessToken: 'invalid_token',
    version: conn.version,
    ...(refresh ? { refreshFn } : {}),
  });
  state.conn.bulk.pollInterval = 50;
  state.conn.bulk2.pollInterval = 50;
  return state;
};
