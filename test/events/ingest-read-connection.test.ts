/**
 * IngestReadConnection against real redis-servers: the same entries as ioredis reads, the
 * block time, NOGROUP, a password, an ACL user and a database from the client's options, TLS,
 * a connection killed by the server and one that falls silent (TcpProxy).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INGEST_GROUP, IngestReadConnection } from '@bubble/store';
import { TcpProxy, findExecutable, freePort, startRedisServer, waitFor } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { skippedWithout } from '../support/missing-tools.js';
import { useRedisServer } from '../support/redis-server.js';

describe('IngestReadConnection', () => {
  const redis = useRedisServer();
  let key = 0;
  const stream = () => `read-connection:${++key}`;

  it('reads what ioredis reads: fields in order, UTF-8 text, an entry deleted while pending', async () => {
    const name = stream();
    await redis.admin.xgroup('CREATE', name, INGEST_GROUP, '0', 'MKSTREAM');
    const bodies = [
      JSON.stringify({ author: 'a1', id: 'p1', ts: 1 }),
      JSON.stringify({ user: 'ü✓😀', text: 'x'.repeat(70_000) }),
      '',
    ];
    for (const body of bodies)
      await redis.admin.xadd(name, '*', 'v', '1', 'op', 'post', 'body', body);
    await redis.admin.xadd(name, '*', 'op', 'counter', 'extra', 'field', 'v', '2');
    const reader = new IngestReadConnection(new Redis(redis.server.url, { lazyConnect: true }));
    try {
      const first = await reader.read(name, INGEST_GROUP, 'c1', 2, undefined, 5_000);
      const rest = await reader.read(name, INGEST_GROUP, 'c1', 10, undefined, 5_000);
      const all = await redis.admin.xrange(name, '-', '+');
      expect([...first, ...rest]).toEqual(
        all.map(([id, fields]) => ({ id, fields, deliveries: 1 })),
      );
      // Deleted while pending: XAUTOCLAIM drops it, a read of the pending list gives no fields.
      await redis.admin.xdel(name, all[0]![0]);
      const again = (await redis.admin.xreadgroup(
        'GROUP',
        INGEST_GROUP,
        'c1',
        'STREAMS',
        name,
        '0',
      )) as [string, [string, string[] | null][]][];
      expect(again[0]![1][0]).toEqual([all[0]![0], null]);
      expect(await reader.read(name, INGEST_GROUP, 'c1', 10, undefined, 5_000)).toEqual([]);
    } finally {
      reader.close();
    }
  });

  it('waits up to the block time for entries, and answers as soon as one comes', async () => {
    const name = stream();
    await redis.admin.xgroup('CREATE', name, INGEST_GROUP, '$', 'MKSTREAM');
    const reader = new IngestReadConnection(new Redis(redis.server.url, { lazyConnect: true }));
    try {
      const started = Date.now();
      expect(await reader.read(name, INGEST_GROUP, 'c1', 10, 200, 5_000)).toEqual([]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      const reading = reader.read(name, INGEST_GROUP, 'c1', 10, 10_000, 15_000);
      await expect(reader.read(name, INGEST_GROUP, 'c1', 10, 100, 5_000)).rejects.toThrow(
        /one XREADGROUP at a time/,
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      const id = await redis.admin.xadd(name, '*', 'v', '1', 'op', 'post', 'body', '{}');
      expect(await reading).toEqual([
        { id, fields: ['v', '1', 'op', 'post', 'body', '{}'], deliveries: 1 },
      ]);
    } finally {
      reader.close();
    }
  });

  it('rejects with NOGROUP when the group is gone, as ioredis does, and reads again after', async () => {
    const name = stream();
    const reader = new IngestReadConnection(new Redis(redis.server.url, { lazyConnect: true }));
    try {
      await expect(reader.read(name, INGEST_GROUP, 'c1', 10, undefined, 5_000)).rejects.toThrow(
        /^NOGROUP/,
      );
      await redis.admin.xgroup('CREATE', name, INGEST_GROUP, '0', 'MKSTREAM');
      const id = await redis.admin.xadd(name, '*', 'v', '1');
      expect(await reader.read(name, INGEST_GROUP, 'c1', 10, undefined, 5_000)).toEqual([
        { id, fields: ['v', '1'], deliveries: 1 },
      ]);
    } finally {
      reader.close();
    }
  });

  it('authenticates and selects the database of the client it was given', async () => {
    const secured = await startRedisServer();
    const setup = new Redis(secured.url);
    await setup.config('SET', 'requirepass', 's3cret');
    setup.disconnect();
    const client = new Redis(`redis://:s3cret@127.0.0.1:${secured.port}/3`, { lazyConnect: true });
    const other = new Redis(`redis://:s3cret@127.0.0.1:${secured.port}/3`);
    const reader = new IngestReadConnection(client);
    try {
      await other.xgroup('CREATE', 'in-db-3', INGEST_GROUP, '0', 'MKSTREAM');
      const id = await other.xadd('in-db-3', '*', 'v', '1');
      expect(await reader.read('in-db-3', INGEST_GROUP, 'c1', 10, undefined, 5_000)).toEqual([
        { id, fields: ['v', '1'], deliveries: 1 },
      ]);
      // An ACL user that may not name its connection (CLIENT refused) still reads.
      await other.call('ACL', 'SETUSER', 'reader', 'on', '>r3ad', '~*', '&*', '+@all', '-client');
      const restricted = new IngestReadConnection(
        new Redis(`redis://reader:r3ad@127.0.0.1:${secured.port}/3`, { lazyConnect: true }),
      );
      const next = await other.xadd('in-db-3', '*', 'v', '2');
      expect(await restricted.read('in-db-3', INGEST_GROUP, 'c2', 10, undefined, 5_000)).toEqual([
        { id: next, fields: ['v', '2'], deliveries: 1 },
      ]);
      restricted.close();
      const wrong = new IngestReadConnection(
        new Redis(`redis://:wrong@127.0.0.1:${secured.port}`, { lazyConnect: true }),
      );
      await expect(wrong.read('in-db-3', INGEST_GROUP, 'c1', 1, undefined, 5_000)).rejects.toThrow(
        /WRONGPASS|invalid password/,
      );
      wrong.close();
    } finally {
      reader.close();
      other.disconnect();
      await secured.stop();
    }
  });

  it('drops a connection that reached a replica (READONLY), so the next read reconnects', async () => {
    const replica = await startRedisServer({
      args: ['--replicaof', '127.0.0.1', String(redis.server.port)],
    });
    const onReplica = new Redis(replica.url);
    try {
      const name = stream();
      await redis.admin.xgroup('CREATE', name, INGEST_GROUP, '0', 'MKSTREAM');
      await waitFor(async () => (await onReplica.exists(name)) === 1);
      const reader = new IngestReadConnection(
        new Redis(replica.url, { connectionName: 'test', lazyConnect: true }),
      );
      await expect(reader.read(name, INGEST_GROUP, 'c1', 10, undefined, 5_000)).rejects.toThrow(
        /^READONLY/,
      );
      await waitFor(
        async () => !String(await onReplica.client('LIST')).includes('name=test:ingest-read'),
        { message: 'the connection to the replica stayed open' },
      );
      reader.close();
    } finally {
      onReplica.disconnect();
      await replica.stop();
    }
  });

  const OVER_TLS = 'reads over TLS when the client does (rediss://), verifying the server';
  it.skipIf(skippedWithout('openssl', findExecutable('openssl'), OVER_TLS))(OVER_TLS, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bubble-tls-'));
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    const tlsPort = await freePort();
    const secured = await startRedisServer({
      args: [
        '--tls-port',
        String(tlsPort),
        '--tls-cert-file',
        cert,
        '--tls-key-file',
        key,
        '--tls-auth-clients',
        'no',
      ],
    });
    const plain = new Redis(secured.url);
    const ca = readFileSync(cert);
    try {
      await plain.xgroup('CREATE', 'over-tls', INGEST_GROUP, '0', 'MKSTREAM');
      const id = await plain.xadd('over-tls', '*', 'v', '1', 'op', 'post', 'body', '{"ü":1}');
      const reader = new IngestReadConnection(
        new Redis({ host: 'localhost', port: tlsPort, tls: { ca }, lazyConnect: true }),
      );
      expect(await reader.read('over-tls', INGEST_GROUP, 'c1', 10, undefined, 5_000)).toEqual([
        { id, fields: ['v', '1', 'op', 'post', 'body', '{"ü":1}'], deliveries: 1 },
      ]);
      reader.close();
      // A server it cannot verify is refused, as ioredis refuses it.
      const untrusting = new IngestReadConnection(
        new Redis({ host: 'localhost', port: tlsPort, tls: {}, lazyConnect: true }),
      );
      await expect(
        untrusting.read('over-tls', INGEST_GROUP, 'c2', 10, undefined, 5_000),
      ).rejects.toThrow(/Connection is closed.*certificate/);
      untrusting.close();
    } finally {
      plain.disconnect();
      await secured.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails a read on a connection the server killed or that fell silent, and connects again', async () => {
    const name = stream();
    await redis.admin.xgroup('CREATE', name, INGEST_GROUP, '$', 'MKSTREAM');
    const proxy = await TcpProxy.start({ port: redis.server.port });
    const reader = new IngestReadConnection(new Redis(proxy.url, { lazyConnect: true }));
    try {
      const blocked = reader.read(name, INGEST_GROUP, 'killed', 10, 10_000, 15_000);
      await waitFor(async () =>
        String(await redis.admin.client('LIST')).includes('cmd=xreadgroup'),
      );
      await redis.admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await expect(blocked).rejects.toThrow(/Connection is closed/);

      proxy.silence();
      const silent = reader.read(name, INGEST_GROUP, 'silent', 10, 100, 600);
      await expect(silent).rejects.toThrow(/Command timed out/);
      proxy.heal();

      const id = await redis.admin.xadd(name, '*', 'v', '1');
      expect(await reader.read(name, INGEST_GROUP, 'after', 10, undefined, 5_000)).toEqual([
        { id, fields: ['v', '1'], deliveries: 1 },
      ]);
    } finally {
      reader.close();
      await proxy.close();
    }
  });
});
