import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['**/dist/**', '**/node_modules/**', 'coverage/**', 'packages/*/lua/**']),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
    },
  },
  {
    // Type-aware rules for the TypeScript sources and tests: each file is checked against the
    // tsconfig that builds it (packages/*/tsconfig.json, the dashboard's browser tsconfig,
    // test/tsconfig.json), found by the project service.
    files: ['packages/*/src/**/*.ts', 'test/**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    // The dashboard's browser code (bundled by packages/gateway/scripts/build-dashboard.mjs).
    files: ['packages/gateway/src/dashboard/browser/**/*.ts'],
    languageOptions: { globals: { ...globals.browser } },
  },
);
