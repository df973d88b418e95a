//go:build !linux

package docker

import "errors"

// commandLayer: the layers are Linux mounts (layer_linux.go); elsewhere there are none.
type commandLayer struct {
	wsID, cacheID [2]uint64
	cache         bool
	overCap       string
}

func (l *commandLayer) merged() string      { return "" }
func (l *commandLayer) mergedCache() string { return "" }
func (l *commandLayer) upper() string       { return "" }
func (l *commandLayer) cacheUpper() string  { return "" }
func (l *commandLayer) shm() string         { return "" }
func (l *commandLayer) close() error        { return nil }

func (b *dockerBackend) layerSupport(int) error {
	return errors.New("the layers are Linux mounts, and the server cannot mount where the Engine runs")
}

func (b *dockerBackend) newLayer() (*commandLayer, error) { return nil, nil }

func unmountLeftovers(string) error { return nil }

func removeLayerDir(string) error { return nil }

func (l *commandLayer) folder() string { return "" }

func (b *dockerBackend) fits(*commandLayer) bool { return true }
