#!/usr/bin/env node
// kafkajs's share of benchmarks/real_shaped.py: many short-lived clients against a loopback
// cluster, in one node process. Input, one JSON object on stdin:
//   brokers   ["host:port", ...] bootstrap servers (PLAINTEXT)
//   topics    [name, ...] existing topics
//   user, password   SASL/PLAIN credentials the brokers accept
//   rounds    how many times the whole mix runs
// Output, one JSON line on stdout: {ok, kafkajs, steps, failures}; every step is bounded.
'use strict'

const { Kafka, CompressionTypes, CompressionCodecs, logLevel, AclResourceTypes, AclOperationTypes,
  AclPermissionTypes, ResourcePatternTypes, ConfigResourceTypes } = require('kafkajs')
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')

const CODECS = [CompressionTypes.None, CompressionTypes.GZIP, CompressionTypes.Snappy]
const failures = []
let steps = 0

function readStdin() {
  return new Promise((resolve, reject) => {
    const parts = []
    process.stdin.on('data', chunk => parts.push(chunk))
    process.stdin.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    process.stdin.on('error', reject)
  })
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function bounded(name, ms, fn) {
  steps += 1; if (process.env.RS_DEBUG) console.error('start', name)
  let timer
  const limit = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)
  })
  return Promise.race([fn(), limit])
    .catch(e => failures.push(`${name}: ${e && e.message ? e.message : e}`))
    .finally(() => { clearTimeout(timer); if (process.env.RS_DEBUG) console.error('end', name) })
}

function client(cfg, id, sasl) {
  return new Kafka({
    clientId: id,
    brokers: cfg.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 5000,
    retry: { retries: 1, initialRetryTime: 100 },
    sasl: sasl ? { mechanism: 'plain', username: cfg.user, password: cfg.password } : undefined,
  })
}

function messages(n, tag) {
  const out = []
  for (let i = 0; i < n; i++) {
    out.push({
      key: `key-${tag}-${i}`,
      value: `value ${i} of ${tag}: ` + 'lorem ipsum dolor '.repeat(8),
      headers: { trace: `trace-${tag}-${i}`.repeat(4) },
    })
  }
  return out
}

async function bootstrapOnly(cfg, n) {
  const admin = client(cfg, `kafkajs-bootstrap-${n}`, n % 4 === 0).admin()
  await admin.connect()
  await admin.fetchTopicMetadata({ topics: [cfg.topics[n % cfg.topics.length]] })
  await admin.disconnect()
}

async function produce(cfg, n, codec, sasl) {
  const producer = client(cfg, `kafkajs-producer-${n}`, sasl).producer({
    allowAutoTopicCreation: false,
    idempotent: n % 3 === 0,
    maxInFlightRequests: n % 3 === 0 ? 1 : undefined,
  })
  await producer.connect()
  try {
    for (let round = 0; round < 4; round++) {
      await producer.sendBatch({
        acks: n % 3 === 0 ? -1 : (round % 2 ? 1 : -1),
        compression: codec,
        topicMessages: cfg.topics.slice(0, 4).map((topic, t) => ({ topic, messages: messages(12, `${n}-${round}-${t}`) })),
      })
    }
  } finally {
    await producer.disconnect()
  }
}

async function consumeInGroup(cfg, group, n, ms) {
  const consumer = client(cfg, `kafkajs-consumer-${n}`, n % 3 === 0).consumer({
    groupId: group,
    sessionTimeout: 10000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 100,
    retry: { retries: 1 },
  })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: cfg.topics.slice(0, 3), fromBeginning: true })
    let seen = 0
    await consumer.run({ autoCommitInterval: 500, eachBatch: async ({ batch }) => { seen += batch.messages.length } })
    await sleep(ms)
    return seen
  } finally {
    await consumer.disconnect()
  }
}

async function transact(cfg, n) {
  const producer = client(cfg, `kafkajs-txn-${n}`, false).producer({
    transactionalId: `kafkajs-txn-${n}`,
    idempotent: true,
    maxInFlightRequests: 1,
  })
  await producer.connect()
  try {
    for (const commit of [true, false]) {
      const txn = await producer.transaction()
      await txn.send({ topic: cfg.topics[0], compression: CompressionTypes.GZIP, messages: messages(5, `txn-${n}`) })
      if (commit) {
        await txn.sendOffsets({
          consumerGroupId: `kafkajs-txn-group-${n}`,
          topics: [{ topic: cfg.topics[1], partitions: [{ partition: 0, offset: '3' }] }],
        })
        await txn.commit()
      } else {
        await txn.abort()
      }
    }
  } finally {
    await producer.disconnect()
  }
}

async function administer(cfg, n) {
  const admin = client(cfg, `kafkajs-admin-${n}`, n % 2 === 1).admin()
  await admin.connect()
  const topic = `kafkajs-admin-${n}`
  const run = (name, fn) => bounded(`admin ${name}`, 6000, fn)
  try {
    await run('createTopics', () => admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: false }))
    await run('createPartitions', () => admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] }))
    await run('describeCluster', () => admin.describeCluster())
    await run('listTopics', () => admin.listTopics())
    await run('fetchTopicOffsets', () => admin.fetchTopicOffsets(cfg.topics[0]))
    await run('describeConfigs', () => admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: cfg.topics[0] }], includeSynonyms: false,
    }))
    await run('alterConfigs', () => admin.alterConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: cfg.topics[0], configEntries: [{ name: 'retention.ms', value: '86400000' }] }],
    }))
    await run('listGroups', () => admin.listGroups())
    await run('describeGroups', () => admin.describeGroups(['kafkajs-group-0-0', 'kafkajs-group-0-1']))
    await run('fetchOffsets', () => admin.fetchOffsets({ groupId: 'kafkajs-group-0-0', topics: [cfg.topics[0]] }))
    await run('deleteGroups', () => admin.deleteGroups([`kafkajs-idle-${n}`]))
    const acl = {
      resourceType: AclResourceTypes.TOPIC, resourceName: topic, resourcePatternType: ResourcePatternTypes.LITERAL,
      principal: 'User:alice', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW,
    }
    await run('createAcls', () => admin.createAcls({ acl: [acl] }))
    await run('describeAcls', () => admin.describeAcls(acl))
    await run('deleteAcls', () => admin.deleteAcls({ filters: [acl] }))
    await run('deleteTopicRecords', () => admin.deleteTopicRecords({ topic: cfg.topics[0], partitions: [{ partition: 0, offset: '-1' }] }))
    if (admin.listPartitionReassignments) {
      await run('listPartitionReassignments', () => admin.listPartitionReassignments({ topics: [{ topic: cfg.topics[0], partitions: [0, 1] }] }))
      await run('alterPartitionReassignments', () => admin.alterPartitionReassignments({ topics: [{ topic: cfg.topics[0], partitionAssignment: [{ partition: 0, replicas: [1, 2, 3] }] }] }))
    }
    await run('deleteTopics', () => admin.deleteTopics({ topics: [topic] }))
  } finally {
    await admin.disconnect()
  }
}

async function main() {
  const cfg = JSON.parse(await readStdin())
  const jobs = []
  let n = 0
  for (let round = 0; round < cfg.rounds; round++) {
    for (let i = 0; i < 14; i++) { const k = n++; jobs.push(bounded(`bootstrap ${k}`, 10000, () => bootstrapOnly(cfg, k))) }
    for (const codec of CODECS) {
      for (let i = 0; i < 3; i++) { const k = n++; jobs.push(bounded(`produce ${k}`, 20000, () => produce(cfg, k, codec, i === 2))) }
    }
    for (let g = 0; g < 3; g++) {
      const k = n++
      const group = `kafkajs-group-${round}-${g}`
      jobs.push(bounded(`group ${group}`, 30000, async () => {
        await consumeInGroup(cfg, group, k, 2500)
        await consumeInGroup(cfg, group, k + 1000, 2000)
      }))
    }
    { const k = n++; jobs.push(bounded(`txn ${k}`, 20000, () => transact(cfg, k))) }
    { const k = n++; jobs.push(bounded(`admin ${k}`, 60000, () => administer(cfg, k))) }
    await Promise.all(jobs.splice(0))
  }
  const { version } = require('kafkajs/package.json')
  process.stdout.write(JSON.stringify({ ok: true, kafkajs: version, steps, failures }) + '\n', () => process.exit(0))
}

main().catch(e => {
  process.stdout.write(JSON.stringify({ ok: false, error: String(e), steps, failures }) + '\n', () => process.exit(1))
})
