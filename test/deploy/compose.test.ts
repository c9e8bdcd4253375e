// docker-compose.yml (a standalone Redis store, three lock masters) run as local processes.
import { describeComposeFile } from './compose-suite.js';

describeComposeFile('docker-compose.yml', 'standalone');
