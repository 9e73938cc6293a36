// A loaded machine for tests whose bug showed only under load: two
// busy-looping processes (one per core on the 2-core test machine).
import { spawn } from 'node:child_process';

/** Runs `fn` while two CPU burners run; kills them after, whatever `fn` does. */
export async function underLoad(fn) {
  const burners = [0, 1].map(() => spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
  try {
    return await fn();
  } finally {
    for (const b of burners) b.kill('SIGKILL');
  }
}
