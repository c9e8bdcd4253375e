throw new Error('import crash');
