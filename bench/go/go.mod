module spawnpool.bench/goserver

go 1.22
