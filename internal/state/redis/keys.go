package redis

import (
	"crypto/sha256"
	"encoding/hex"
)

// keys names the Redis keys of one namespace. Session and ask IDs appear
// as they are (they are names, not secrets); tokens and the sessions in
// grant keys appear only as SHA-256 digests, so listing the keys reveals
// no token.
type keys struct {
	prefix string // "mcpwarden:<namespace>:"
}

// grants is the sorted set of a session's grants, each member a grant's
// JSON scored by its expiry in Redis's clock (milliseconds). It is
// "grants2:" since a grant keeps its state.Answer (it kept an effect,
// allow or deny, under "grants:"): a replica of either version does not
// read the other's grants, so during a rolling upgrade a grant given on one
// is asked again on the other instead of failing to decode.
func (k keys) grants(session string) string { return k.prefix + "grants2:" + digest(session) }

// ask is a pending ask's JSON, expiring with the ask.
func (k keys) ask(id string) string { return k.prefix + "ask:" + id }

// asks is the sorted set of pending ask IDs, scored by when they were asked.
func (k keys) asks() string { return k.prefix + "asks" }

// answer is an answered ask's answer, kept until withdrawn or expired.
func (k keys) answer(id string) string { return k.prefix + "answer:" + id }

// answers is the pub/sub channel on which answered ask IDs are published.
func (k keys) answers() string { return k.prefix + "answers" }

// token is a single-use token's value.
func (k keys) token(token string) string { return k.prefix + "token:" + digest(token) }

// session is a client session's record.
func (k keys) session(id string) string { return k.prefix + "session:" + id }

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
