// Our recording proxy alone in its own process (recording into a real session), so the benchmark
// reads its memory from /proc and it does not share a thread with the load it serves.
import { startRecording } from '../../electron/recording/sessionRecording.ts';
import { capsemHome } from '../../electron/store/paths.ts';

const recording = await startRecording(capsemHome(), { name: null, command: ['bench'], origin: { processName: 'bench' } });
process.stdout.write(`${recording.proxy.url}\n`);
process.on('SIGTERM', () => void recording.stop({ status: 'stopped' }).then(() => process.exit(0)));
