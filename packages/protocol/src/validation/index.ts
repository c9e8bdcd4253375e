export * from './describe-issues.js';
export * from './issue-message.js';
export * from './validate.js';
export * from './posts.js';
export * from './cursor-migration.js';
export * from './json-text.js';
