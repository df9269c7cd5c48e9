package proxy

import (
	"crypto/rand"
	"sync"
)

// A tokenSet holds values by a random token (128 bits from crypto/rand,
// so unguessable) until they are taken: the arguments lifted out of the
// messages of one HTTP request or stdio connection (see lifted), and the
// results its writer is to stream (see streamedResult). It is safe for
// concurrent use; the zero value is empty.
type tokenSet[T interface{ release() }] struct {
	mu sync.Mutex
	m  map[string]T
}

// put keeps v and returns the token that names it.
func (s *tokenSet[T]) put(v T) string {
	token := rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]T{}
	}
	s.m[token] = v
	return token
}

// take removes and returns the value token names, or the zero value when
// there is none (or s is nil).
func (s *tokenSet[T]) take(token string) T {
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

// releaseAll removes and releases every value no one took.
func (s *tokenSet[T]) releaseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for token, v := range s.m {
		v.release()
		delete(s.m, token)
	}
}
