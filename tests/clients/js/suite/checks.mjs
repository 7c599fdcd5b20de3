// The kind checks jsforce's tests make of values.
export const isObject = (value) => value !== null && typeof value === 'object';
export const isString = (value) => typeof value === 'string';
export const isNumber = (value) => typeof value === 'number';
export const isBoolean = (value) => typeof value === 'boolean';
export const isUndefined = (value) => value === undefined;
export const isMapObject = (value) => isObject(value) && !Array.isArray(value);
