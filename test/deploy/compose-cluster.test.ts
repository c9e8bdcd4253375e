// docker-compose.cluster.yml (the store on a 3-master Redis Cluster) run as local processes.
import { describeComposeFile } from './compose-suite.js';

describeComposeFile('docker-compose.cluster.yml', 'cluster');
