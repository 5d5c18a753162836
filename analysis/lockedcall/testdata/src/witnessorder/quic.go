package witnessorder

func (c *Conn) HandleData() {
	c.handshakeMutex.Lock()
	defer c.handshakeMutex.Unlock()
	c.handlePost()
}
