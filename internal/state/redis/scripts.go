package redis

import goredis "github.com/redis/go-redis/v9"

// nowMS is Redis's clock in milliseconds, in a script: every replica's
// grants expire by the same clock.
const nowMS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// putGrant adds ARGV[1] to the grants set KEYS[1], expiring ARGV[2] ms
// from now, drops the expired members, and expires the set with its
// longest-lived member.
var putGrant = goredis.NewScript(nowMS + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return 1
`)

// findGrants returns the members of the grants set KEYS[1] that have not
// expired.
var findGrants = goredis.NewScript(nowMS + `
return redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE')
`)

// publishAsk sets the ask KEYS[1] to ARGV[1] for ARGV[2] ms unless it is
// there, lists its ID ARGV[4] in KEYS[2] scored ARGV[3] (the list expires
// with its longest-lived ask), and drops a stale answer KEYS[3]. It
// returns 0 when the ask was there.
var publishAsk = goredis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
local left = redis.call('PTTL', KEYS[2])
if left < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
redis.call('DEL', KEYS[3])
return 1
`)

// answerAsk settles the pending ask KEYS[1] (ID ARGV[1], listed in
// KEYS[2]): it removes it, keeps the answer ARGV[2] in KEYS[3] as long as
// the ask had left (at least a minute), and publishes the ID on ARGV[3].
// It returns 0 when the ask was not pending.
var answerAsk = goredis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then
  return 0
end
if ttl < 60000 then
  ttl = 60000
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ttl)
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
`)

// withdrawAsk removes the pending ask KEYS[1] (ID ARGV[1], listed in
// KEYS[2]) and returns and removes its answer KEYS[3], if any.
var withdrawAsk = goredis.NewScript(`
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('GETDEL', KEYS[3])
`)
