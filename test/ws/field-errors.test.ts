/**
 * A refused read frame answers an error frame that names the field and the rule it broke, with
 * the code an HTTP read of the same body answers (docs/api.md, "Errors"; docs/protocol.md).
 */
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { connect } from './live-client.js';
import { useEngine } from './support.js';

const ID_RULE = 'must be 1 to 64 characters of [A-Za-z0-9_.:@-]';

describe('WebSocket error frames name the field [memory]', () => {
  const rig = useEngine('memory');

  it('answers each refused read with the field and the rule', async () => {
    const app = await rig.start({ core: false });
    const client = await connect(app, 'reader');
    const cases: Array<[unknown, string, string]> = [
      [{ type: 'read', scope: 'conversation' }, 'UB_ERR_BAD_REQUEST', 'id: required'],
      [{ type: 'read', scope: 'conversation', id: 'c 7' }, 'UB_ERR_BAD_ID', `id: ${ID_RULE}`],
      [
        { type: 'read', scope: 'feed', upTo: '123' },
        'UB_ERR_BAD_REQUEST',
        'upTo: must be a non-negative integer of ms',
      ],
      [{ type: 'read', scope: 'all', extra: true }, 'UB_ERR_BAD_REQUEST', 'extra: unknown field'],
      [
        { type: 'read', scope: 'nope' },
        'UB_ERR_BAD_REQUEST',
        'scope: must be one of "feed", "notices", "conversation", "reddot", "counter", "all"',
      ],
    ];
    for (const [frame, code, message] of cases) {
      const before = client.frames.length;
      client.send(frame);
      const error = await waitFor(
        () => client.frames.slice(before).find((f) => f.type === 'error'),
        { message: `no error frame for ${JSON.stringify(frame)}` },
      );
      expect(error, JSON.stringify(frame)).toEqual({ type: 'error', code, message });
    }
    expect(client.closed).toBeNull();
  });
});
