/** A forked executor process of the multi-process drain (see src/bench/executor-child.ts). */
import { runExecutorChild } from '../src/bench/executor-child.js';

void runExecutorChild();
