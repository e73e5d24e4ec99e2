// A KafkaJS group member for tests/kafka/clients.py: node kafkajs_consumer.js BOOTSTRAP TOPIC GROUP
//
// Reads TOPIC from the beginning as a member of GROUP, committing each batch after it is delivered, and prints
// one JSON line a message ({"message": [partition, offset, key base64 or null, value base64]}) and one a
// successful commit ({"committed": [partition, next offset]}); a refused commit prints {"commit_failed": ...}.
// SIGTERM makes it leave the group and exit 0; any other end is an error (exit 1, the reason on stderr).
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, groupId] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'logtide-kafkajs', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 } });
const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 10000,
                                  maxWaitTimeInMs: 200, retry: { retries: 20 } });
const out = (line) => process.stdout.write(JSON.stringify(line) + '\n');
const b64 = (buf) => (buf === null ? null : buf.toString('base64'));

async function main() {
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        out({ message: [batch.partition, Number(m.offset), b64(m.key), b64(m.value)] });
      }
      if (batch.messages.length === 0) return;
      const next = Number(batch.lastOffset()) + 1;
      try {
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(next) }]);
        out({ committed: [batch.partition, next] });
      } catch (e) {
        out({ commit_failed: String(e) });
      }
    },
  });
}

process.on('SIGTERM', () => {
  consumer.disconnect().then(() => process.exit(0), (e) => { console.error(String(e)); process.exit(1); });
});
consumer.on(consumer.events.CRASH, (e) => {  // KafkaJS restarts the consumer after a retriable error
  console.error('crash: ' + String(e.payload.error));
  if (!e.payload.restart) process.exit(1);
});
main().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
