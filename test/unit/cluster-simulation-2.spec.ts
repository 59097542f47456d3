import { simulationSuite } from '../simulation/simulation-suite';

simulationSuite(2);
