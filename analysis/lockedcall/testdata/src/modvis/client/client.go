// Package client calls, under its lock, function values that the module's
// internal packages made: they are visible code.
package client

import (
	"context"
	"sync"
	"time"

	"modvis/internal/clock"
	"modvis/internal/transport"
	"modvis/public"
)

type Client struct {
	mu    sync.Mutex
	close func()
	stop  func()
}

func init() { clock.Sleep = time.Sleep }

func New() *Client {
	_, closeFn := transport.Open()
	return &Client{close: closeFn, stop: transport.Watch(context.Background())}
}

func (c *Client) tick() {}

func (c *Client) Tick() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	stop := clock.AfterFunc(time.Second, c.tick)
	stop()
	c.close()
	c.stop()
	clock.Sleep(0)
	public.Hook() // want `call of public.Hook \(a package variable\) while c.mu is held`
	return clock.Now()
}
