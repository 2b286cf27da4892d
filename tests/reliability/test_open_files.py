"""The chroma group index with more groups than Chroma can hold open keeps answering correctly."""

import json
import subprocess
import sys
import textwrap

from tests.reliability.counts import record

LIMIT = 256  # Chroma then keeps about 256 // 5 = 51 collection indexes
GROUPS = 360


def test_more_groups_than_chroma_can_hold_open():
    script = textwrap.dedent(f"""
        import json, resource
        resource.setrlimit(resource.RLIMIT_NOFILE, ({LIMIT}, {LIMIT}))
        import numpy as np
        from reference import CellularMemory, MemoryConfig
        from reference.encoders import MockEncoder
        vectors = np.random.default_rng(0).standard_normal(({GROUPS}, 16))
        config = MemoryConfig.prototype(group_backend="chroma", join_threshold=0.999, max_groups=10_000)
        with CellularMemory(encoder=MockEncoder(16), config=config) as memory:
            ids = memory.add([f"cell {{i}}" for i in range({GROUPS})], vectors=vectors)
            found = 0
            for _ in range(2):
                found += sum(memory.search(v, k=1)[0].id == i for v, i in zip(vectors, ids))
            index = memory._state.index
            print(json.dumps({{"groups": memory.stats().groups, "found": int(found),
                              "collections_built": index.builds, "capacity": index.capacity}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    record("open_files", rlimit_nofile=LIMIT, **result, searches=2 * GROUPS)
    assert result["groups"] == GROUPS > LIMIT // 5
    assert result["found"] == 2 * GROUPS
