#!/usr/bin/env node
// Produce records with kafkajs to one broker, then (optionally) read the partition offsets back
// with kafkajs's admin client; driven by tests/realclients/node_clients.py.
//
// Input, one JSON object on stdin:
//   bootstrap      "host:port"
//   records        [{topic, partition, key, value, headers: [[name, value], ...]}]; key, value and
//                  header values are base64 strings or null
//   compression    "none" | "gzip" | "snappy" (snappy needs the pure-JS kafkajs-snappy plugin)
//   acks           -1 | 1 | 0
//   rounds         the records are sent in this many consecutive sendBatch calls (default 1), so
//                  that a partition can get several record batches
//   idempotent     kafkajs's idempotent producer (InitProducerId; needs acks -1)
//   autoCreate     allowAutoTopicCreation of the producer
//   offsets        after producing, fetch every topic's low and high offsets (ListOffsets)
//   timeoutMs      bound on each request, and (times 3) on the whole run
//
// Output, one JSON line on stdout: {ok: true, kafkajs, results, offsets} or {ok: false, error};
// the exit status is 0 only for ok. kafkajs itself logs nothing (logLevel NOTHING).
'use strict'

const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = require('kafkajs')

const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy }

function readStdin() {
  return new Promise((resolve, reject) => {
    const parts = []
    process.stdin.on('data', chunk => parts.push(chunk))
    process.stdin.on('end', () => resolve(Buffer.concat(parts).toString('utf8')))
    process.stdin.on('error', reject)
  })
}

function finish(result, code) {
  // Exit explicitly: a socket kafkajs left open must not keep the process (and the test) waiting.
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(code))
}

function fail(error) {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  finish({ ok: false, error: text }, 1)
}

function bytes(b64) {
  return b64 === null ? null : Buffer.from(b64, 'base64')
}

// kafkajs takes headers as an object, a repeated name as an array of values. An object cannot
// keep every order: names that look like array indices are enumerated first, and the values of
// one name sit together. Refuse what would not reach the wire in the order given, rather than
// let the test compare against a reordering of our own making.
function toHeaders(pairs) {
  const headers = {}
  let previous = null
  for (const [name, value] of pairs) {
    if (/^(0|[1-9][0-9]*)$/.test(name)) {
      throw new Error(`header name ${JSON.stringify(name)} would be reordered by a JavaScript object`)
    }
    if (value === null) {
      // kafkajs 2.2.4 measures every header value with Buffer.byteLength, which throws on null.
      throw new Error(`header ${JSON.stringify(name)} has a null value, which kafkajs cannot send`)
    }
    if (!Object.prototype.hasOwnProperty.call(headers, name)) {
      headers[name] = bytes(value)
    } else if (previous === name) {
      headers[name] = [].concat(headers[name], bytes(value))
    } else {
      throw new Error(`header ${JSON.stringify(name)} repeats after another header`)
    }
    previous = name
  }
  return headers
}

// One sendBatch argument per topic, records in the order given (kafkajs keeps that order within
// a partition).
function topicMessages(records) {
  const byTopic = new Map()
  for (const r of records) {
    if (!byTopic.has(r.topic)) byTopic.set(r.topic, [])
    byTopic.get(r.topic).push({
      partition: r.partition,
      key: bytes(r.key),
      value: bytes(r.value),
      headers: toHeaders(r.headers || []),
    })
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }))
}

function rounds(records, count) {
  const size = Math.ceil(records.length / Math.max(1, count))
  const out = []
  for (let start = 0; start < records.length; start += size) out.push(records.slice(start, start + size))
  return out
}

function compressionOf(name) {
  if (!(name in CODECS)) throw new Error(`unknown compression ${JSON.stringify(name)}`)
  if (name === 'snappy') {
    // Loaded only when asked for, so that none and gzip need nothing beyond kafkajs.
    CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
  }
  return CODECS[name]
}

async function produce(kafka, input) {
  const compression = compressionOf(input.compression || 'none')
  const idempotent = Boolean(input.idempotent)
  const producer = kafka.producer({
    allowAutoTopicCreation: Boolean(input.autoCreate),
    idempotent,
    // One request at a time keeps the wire in send order; kafkajs's idempotent producer asks for
    // it, and demands at least one retry.
    maxInFlightRequests: 1,
    retry: { retries: idempotent ? 1 : 0 },
  })
  // Built before connecting, so that records kafkajs cannot send are refused without a broker.
  const batches = rounds(input.records, input.rounds || 1).map(topicMessages)
  await producer.connect()
  const results = []
  try {
    for (const messages of batches) {
      const sent = await producer.sendBatch({
        topicMessages: messages, acks: input.acks, timeout: input.timeoutMs, compression,
      })
      results.push(...(sent || []))
    }
  } finally {
    await producer.disconnect()
  }
  return results
}

async function offsets(kafka, topics) {
  const admin = kafka.admin({ retry: { retries: 0 } })
  await admin.connect()
  const out = {}
  try {
    for (const topic of topics) out[topic] = await admin.fetchTopicOffsets(topic)
  } finally {
    await admin.disconnect()
  }
  return out
}

async function main() {
  const input = JSON.parse(await readStdin())
  const timeoutMs = input.timeoutMs || 10000
  setTimeout(() => fail(new Error(`no result within ${3 * timeoutMs} ms`)), 3 * timeoutMs)
  const kafka = new Kafka({
    clientId: 'kafka-epochs-kafkajs',
    brokers: [input.bootstrap],
    logLevel: logLevel.NOTHING,
    connectionTimeout: Math.min(timeoutMs, 5000),
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
  })
  const results = await produce(kafka, { ...input, timeoutMs })
  const topics = [...new Set(input.records.map(r => r.topic))]
  const read = input.offsets ? await offsets(kafka, topics) : null
  return { ok: true, kafkajs: require('kafkajs/package.json').version, results, offsets: read }
}

main().then(result => finish(result, 0), fail)
