//go:build tools

// Package tools pins the load generator the benchmark builds into bench/build/:
//   go build -o ../build/bombardier github.com/codesenberg/bombardier
package tools

import _ "github.com/codesenberg/bombardier"
