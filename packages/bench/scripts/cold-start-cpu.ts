/**
 * CPU of the gateway's batched cold start (BadgeService.badges, what offline delivery's senders
 * run) per user, in process against a redis-server: users in one pair conversation each with
 * unread messages, batches of 100, the CPU of this process per user computed.
 *
 *   npx tsx packages/bench/scripts/cold-start-cpu.ts <redis-url> [users=2000] [rounds=20]
 */
import { BadgeService } from '@bubble/badges';
import { systemClock } from '@bubble/protocol';
import { RedisStore } from '@bubble/store';

const [url = 'redis://127.0.0.1:6379', usersArg = '2000', roundsArg = '20'] = process.argv.slice(2);
const users = Array.from({ length: Number(usersArg) }, (_, i) => `u${i}`);
const store = new RedisStore({ url, keyPrefix: `cs${Date.now()}`, pools: 100 });
const service = new BadgeService(store, systemClock);
for (let i = 0; i < users.length; i += 2) {
  const id = `c${i}`;
  await service.replaceMembers(id, [users[i]!, users[i + 1]!]);
  await service.ingestMessages(id, [{ seq: 3, from: users[i]! }]);
}
const perUser: number[] = [];
for (let round = 0; round < Number(roundsArg); round++) {
  const cpu = process.cpuUsage();
  for (let i = 0; i < users.length; i += 100) await service.badges(users.slice(i, i + 100));
  const used = process.cpuUsage(cpu);
  perUser.push((used.user + used.system) / users.length);
}
perUser.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    cpuUsPerUserMedian: Math.round(perUser[perUser.length >> 1]! * 10) / 10,
    cpuUsPerUserMin: Math.round(perUser[0]! * 10) / 10,
    commandsPerUser:
      Math.round((store.commandsSent() / users.length / Number(roundsArg)) * 10) / 10,
  }),
);
await store.close();
