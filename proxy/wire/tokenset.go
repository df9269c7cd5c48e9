package wire

import (
	"crypto/rand"
	"sync"
)

// A TokenSet holds values by a random token (128 bits from crypto/rand,
// so unguessable) until they are taken: the arguments lifted out of the
// messages of one HTTP request or stdio connection (see Lifted), and the
// results its writer is to stream (see streamedResult). It is safe for
// concurrent use; the zero value is empty.
type TokenSet[T interface{ Release() }] struct {
	mu sync.Mutex
	m  map[string]T
}

// Put keeps v and returns the token that names it.
func (s *TokenSet[T]) Put(v T) string {
	token := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]T{}
	}
	s.m[token] = v
	return token
}

// Take removes and returns the value token names, or the zero value when
// there is none (or s is nil).
func (s *TokenSet[T]) Take(token string) T {
	var v T
	if s == nil {
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v = s.m[token]
	delete(s.m, token)
	return v
}

// ReleaseAll removes and releases every value no one took.
func (s *TokenSet[T]) ReleaseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for token, v := range s.m {
		v.Release()
		delete(s.m, token)
	}
}
