package upstream

import "sync"

// A resultStash holds the results the lineLimiter took out of responses,
// by the JSON text of their id, for the calls waiting for them. It takes a
// result only for an id a call expects, and forgetting the id drops it, so
// a response that comes after its call gave up leaves nothing behind.
//
// It also hands whole responses to the calls sent past mcp-go's transport
// (see rawStdio.sendDirect), which wait for them in direct: such a
// response is taken off the stream, as mcp-go's transport did not send
// its request.
type resultStash struct {
	mu      sync.Mutex
	waiting map[string][]byte      // id → result; nil until it arrives
	direct  map[string]chan []byte // id → where its response goes; buffered for one
	ended   chan struct{}          // closed when the stream has ended: no response comes now
	endOnce sync.Once
}

func newResultStash() *resultStash {
	return &resultStash{waiting: map[string][]byte{}, direct: map[string]chan []byte{}, ended: make(chan struct{})}
}

func (s *resultStash) expect(id string) {
	s.mu.Lock()
	s.waiting[id] = nil
	s.mu.Unlock()
}

func (s *resultStash) forget(id string) {
	s.mu.Lock()
	delete(s.waiting, id)
	s.mu.Unlock()
}

// expects reports whether a call waits for the result of id. It takes the
// id as bytes, as the lineLimiter has it, so the lookup does not allocate.
func (s *resultStash) expects(id []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.waiting[string(id)]
	return ok
}

// put stores result for id, if a call still expects it.
func (s *resultStash) put(id, result []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.waiting[string(id)]; !ok {
		return false
	}
	s.waiting[string(id)] = result
	return true
}

func (s *resultStash) take(id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	result := s.waiting[id]
	delete(s.waiting, id)
	return result, result != nil
}

// await registers a call sent past mcp-go's transport with id: its whole
// response will be sent on the channel returned. It fails once the stream
// has ended.
func (s *resultStash) await(id string) (<-chan []byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.ended:
		return nil, false
	default:
	}
	ch := make(chan []byte, 1)
	s.direct[id] = ch
	return ch, true
}

// drop forgets the call with id that await registered.
func (s *resultStash) drop(id string) {
	s.mu.Lock()
	delete(s.direct, id)
	s.mu.Unlock()
}

// claim takes the call sent past mcp-go's transport that waits for the
// response with id off the waiting list, and returns where its response
// goes (buffered for it): no other response is handed to it. It takes
// the id as bytes, as the lineLimiter has it, so the lookup does not
// allocate.
func (s *resultStash) claim(id []byte) (chan<- []byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.direct[string(id)]
	if ok {
		delete(s.direct, string(id))
	}
	return ch, ok
}

// end says the stream has ended: the calls waiting for a response, and
// those that would register now, get none.
func (s *resultStash) end() {
	s.endOnce.Do(func() { close(s.ended) })
}
