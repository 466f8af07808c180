// The order files start in: the `process` project's first, then the rest, each part in vitest's own
// order (failed first, then longest first, from its cache; unknown files first). Files run several
// at a time, so the run lasts at least as long as its slowest file plus whatever started before it:
// on a fresh clone, with no cache, vitest would start the slow process-level files last.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const FIRST = 'process';

export class ProcessFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return [
      ...sorted.filter((spec) => spec.project.name === FIRST),
      ...sorted.filter((spec) => spec.project.name !== FIRST),
    ];
  }
}
