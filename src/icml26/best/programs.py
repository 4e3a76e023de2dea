"""Source code of the Mini-BEST programs: standard solutions and candidates.

Every program is a string of Python source defining ``class Solution`` with ``solve``,
exactly what a model is asked to write. Per task, ``STANDARDS`` holds the expert
solutions on the time/space Pareto front, ``CANDIDATES`` programs of known character:

``time_hungry``  fast, but spends memory it does not need;
``space_slow``   little extra memory, slow;
``brute``        slow and wasteful (dominated);
``buggy``        wrong on some inputs.

``HAZARDS`` are programs that misbehave (hang, sleep, exhaust memory, crash, do not
load); the tests use them to check that the harness stops and fails them.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- range_max
RANGE_MAX = {
    "sparse_table": """
class Solution:
    def solve(self, a, queries):
        # sparse table: O(n log n) memory, O(1) per query
        n = len(a)
        table = [a]
        span = 1
        while 2 * span <= n:
            prev = table[-1]
            table.append(list(map(max, prev[:len(prev) - span], prev[span:])))
            span *= 2
        total = 0
        for l, r in queries:
            k = (r - l + 1).bit_length() - 1
            row = table[k]
            x, y = row[l], row[r - (1 << k) + 1]
            total += x if x > y else y
        return total
""",
    "sqrt_blocks": """
class Solution:
    def solve(self, a, queries):
        # block maxima: O(sqrt n) memory, O(sqrt n) per query
        n = len(a)
        b = max(1, int(n ** 0.5))
        blocks = [max(a[s:s + b]) for s in range(0, n, b)]
        total = 0
        for l, r in queries:
            bl, br = l // b, r // b
            m = a[l]
            if bl == br:
                for i in range(l + 1, r + 1):
                    if a[i] > m:
                        m = a[i]
            else:
                for i in range(l + 1, (bl + 1) * b):
                    if a[i] > m:
                        m = a[i]
                for i in range(br * b, r + 1):
                    if a[i] > m:
                        m = a[i]
                for x in range(bl + 1, br):
                    if blocks[x] > m:
                        m = blocks[x]
            total += m
        return total
""",
    "scan": """
from itertools import islice
class Solution:
    def solve(self, a, queries):
        # no extra memory: scan each range
        total = 0
        for l, r in queries:
            total += max(islice(a, l, r + 1))
        return total
""",
}
RANGE_MAX_CANDIDATES = {
    "time_hungry": """
class Solution:
    def solve(self, a, queries):
        n = len(a)
        levels = [list(a)]
        j = 1
        while (1 << j) <= n:
            p = levels[j - 1]
            h = 1 << (j - 1)
            levels.append([max(p[i], p[i + h]) for i in range(n - (1 << j) + 1)])
            j += 1
        logs = [0] * (n + 1)
        for i in range(2, n + 1):
            logs[i] = logs[i // 2] + 1
        answers = []
        for l, r in queries:
            k = logs[r - l + 1]
            answers.append(max(levels[k][l], levels[k][r - (1 << k) + 1]))
        return sum(answers)
""",
    "space_slow": """
class Solution:
    def solve(self, a, queries):
        total = 0
        for l, r in queries:
            best = a[l]
            for i in range(l + 1, r + 1):
                if a[i] > best:
                    best = a[i]
            total += best
        return total
""",
    "brute": """
class Solution:
    def solve(self, a, queries):
        results = []
        for l, r in queries:
            window = sorted(a[l:r + 1])
            results.append(window[-1])
        return sum(results)
""",
    "buggy": """
class Solution:
    def solve(self, a, queries):
        n = len(a)
        table = [a]
        span = 1
        while 2 * span <= n:
            prev = table[-1]
            table.append(list(map(max, prev[:len(prev) - span], prev[span:])))
            span *= 2
        total = 0
        for l, r in queries:
            k = (r - l).bit_length() - 1   # bug: wrong level when l == r
            row = table[k]
            x, y = row[l], row[r - (1 << k) + 1]
            total += x if x > y else y
        return total
""",
}

# --------------------------------------------------------------------------- pair_count
PAIR_COUNT = {
    "hash_count": """
class Solution:
    def solve(self, a, target):
        # one pass with a dictionary of counts: O(n) time and memory
        seen = {}
        pairs = 0
        for x in a:
            pairs += seen.get(target - x, 0)
            seen[x] = seen.get(x, 0) + 1
        return pairs
""",
    "sort_two_pointers": """
class Solution:
    def solve(self, a, target):
        # sort in place, then two pointers over runs of equal values
        a.sort()
        i, j = 0, len(a) - 1
        pairs = 0
        while i < j:
            s = a[i] + a[j]
            if s < target:
                i += 1
            elif s > target:
                j -= 1
            elif a[i] == a[j]:
                m = j - i + 1
                pairs += m * (m - 1) // 2
                break
            else:
                x, y = a[i], a[j]
                ci = cj = 0
                while a[i] == x:
                    i += 1
                    ci += 1
                while a[j] == y:
                    j -= 1
                    cj += 1
                pairs += ci * cj
        return pairs
""",
    "count_scan": """
class Solution:
    def solve(self, a, target):
        # O(1) extra memory: count partners with list.count (quadratic time)
        ordered = 0
        self_pairs = 0
        for x in a:
            ordered += a.count(target - x)
            if 2 * x == target:
                self_pairs += 1
        return (ordered - self_pairs) // 2
""",
}
PAIR_COUNT_CANDIDATES = {
    "time_hungry": """
from collections import defaultdict
class Solution:
    def solve(self, a, target):
        positions = defaultdict(list)
        for i, x in enumerate(a):
            positions[x].append(i)
        pairs = 0
        for x, idx in positions.items():
            y = target - x
            if y == x:
                pairs += len(idx) * (len(idx) - 1) // 2
            elif y > x and y in positions:
                pairs += len(idx) * len(positions[y])
        return pairs
""",
    "space_slow": """
class Solution:
    def solve(self, a, target):
        n = len(a)
        pairs = 0
        for i in range(n):
            need = target - a[i]
            for j in range(i + 1, n):
                if a[j] == need:
                    pairs += 1
        return pairs
""",
    "brute": """
class Solution:
    def solve(self, a, target):
        n = len(a)
        found = [(i, j) for i in range(n) for j in range(i + 1, n) if a[i] + a[j] == target]
        return len(found)
""",
    "buggy": """
class Solution:
    def solve(self, a, target):
        seen = {}
        pairs = 0
        for x in a:
            seen[x] = seen.get(x, 0) + 1   # bug: counted before the look-up, pairs x with itself
            pairs += seen.get(target - x, 0)
        return pairs - (1 if target % 2 == 0 and target // 2 in seen else 0)
""",
}

# --------------------------------------------------------------------- longest_palindrome
LONGEST_PALINDROME = {
    "manacher": """
class Solution:
    def solve(self, s):
        # Manacher: O(n) time, O(n) memory
        t = "^#" + "#".join(s) + "#$"
        p = [0] * len(t)
        center = right = 0
        for i in range(1, len(t) - 1):
            if i < right:
                p[i] = min(right - i, p[2 * center - i])
            while t[i + p[i] + 1] == t[i - p[i] - 1]:
                p[i] += 1
            if i + p[i] > right:
                center, right = i, i + p[i]
        return max(p)
""",
    "expand_center": """
class Solution:
    def solve(self, s):
        # expand around each of the 2n - 1 centres: O(1) memory, O(n^2) worst case
        n = len(s)
        best = 1 if n else 0
        for c in range(2 * n - 1):
            lo, hi = c // 2, (c + 1) // 2
            while lo >= 0 and hi < n and s[lo] == s[hi]:
                lo -= 1
                hi += 1
            if hi - lo - 1 > best:
                best = hi - lo - 1
        return best
""",
}
LONGEST_PALINDROME_CANDIDATES = {
    "time_hungry": """
class Solution:
    def solve(self, s):
        chars = ["^"]
        for ch in s:
            chars.append("#")
            chars.append(ch)
        chars += ["#", "$"]
        radius = [0] * len(chars)
        found = []
        c = r = 0
        for i in range(1, len(chars) - 1):
            radius[i] = min(r - i, radius[2 * c - i]) if i < r else 0
            while chars[i + radius[i] + 1] == chars[i - radius[i] - 1]:
                radius[i] += 1
            if i + radius[i] > r:
                c, r = i, i + radius[i]
            found.append((i, radius[i]))
        return max(length for _, length in found)
""",
    "space_slow": """
class Solution:
    def solve(self, s):
        n = len(s)
        best = 0
        for length in range(n, 0, -1):
            for i in range(n - length + 1):
                lo, hi = i, i + length - 1
                while lo < hi and s[lo] == s[hi]:
                    lo += 1
                    hi -= 1
                if lo >= hi:
                    return length
        return best
""",
    "brute": """
class Solution:
    def solve(self, s):
        n = len(s)
        if n == 0:
            return 0
        dp = [[False] * n for _ in range(n)]
        best = 1
        for i in range(n - 1, -1, -1):
            dp[i][i] = True
            for j in range(i + 1, n):
                if s[i] == s[j] and (j - i < 2 or dp[i + 1][j - 1]):
                    dp[i][j] = True
                    if j - i + 1 > best:
                        best = j - i + 1
        return best
""",
    "buggy": """
class Solution:
    def solve(self, s):
        n = len(s)
        best = 1 if n else 0
        for c in range(n):      # bug: odd-length palindromes only
            lo, hi = c - 1, c + 1
            while lo >= 0 and hi < n and s[lo] == s[hi]:
                lo -= 1
                hi += 1
            best = max(best, hi - lo - 1)
        return best
""",
}

# --------------------------------------------------------------------------- grid_paths
GRID_PATHS = {
    "rolling_row": """
class Solution:
    def solve(self, grid):
        # one row of counts: O(m) memory, O(n m) time
        mod = 10 ** 9 + 7
        m = len(grid[0])
        row = [0] * m
        row[0] = 1
        for line in grid:
            left = 0
            for j in range(m):
                if line[j] == "#":
                    row[j] = 0
                else:
                    row[j] = (row[j] + left) % mod
                left = row[j]
        return row[-1]
""",
}
GRID_PATHS_CANDIDATES = {
    "time_hungry": """
class Solution:
    def solve(self, grid):
        mod = 10 ** 9 + 7
        n, m = len(grid), len(grid[0])
        dp = [[0] * m for _ in range(n)]
        for i in range(n):
            for j in range(m):
                if grid[i][j] == "#":
                    continue
                if i == 0 and j == 0:
                    dp[i][j] = 1
                    continue
                up = dp[i - 1][j] if i else 0
                left = dp[i][j - 1] if j else 0
                dp[i][j] = (up + left) % mod
        return dp[n - 1][m - 1]
""",
    "space_slow": """
class Solution:
    def solve(self, grid):
        mod = 10 ** 9 + 7
        n, m = len(grid), len(grid[0])
        prev = [0] * m
        for i in range(n):
            cur = [0] * m
            for j in range(m):
                if grid[i][j] == "#":
                    continue
                if i == 0 and j == 0:
                    cur[j] = 1
                else:
                    total = 0
                    if i > 0:
                        total += prev[j]
                    if j > 0:
                        total += cur[j - 1]
                    cur[j] = total % mod
            prev = cur
        return prev[m - 1]
""",
    "brute": """
from functools import lru_cache
class Solution:
    def solve(self, grid):
        mod = 10 ** 9 + 7
        n, m = len(grid), len(grid[0])

        @lru_cache(maxsize=None)
        def ways(i, j):
            if i >= n or j >= m or grid[i][j] == "#":
                return 0
            if i == n - 1 and j == m - 1:
                return 1
            return (ways(i + 1, j) + ways(i, j + 1)) % mod

        return ways(0, 0)
""",
    "buggy": """
class Solution:
    def solve(self, grid):
        mod = 10 ** 9 + 7
        m = len(grid[0])
        row = [1] * m              # bug: first row assumed free of walls
        for line in grid[1:]:
            left = 0
            for j in range(m):
                if line[j] == "#":
                    row[j] = 0
                else:
                    row[j] = (row[j] + left) % mod
                left = row[j]
        return row[-1]
""",
}

# ------------------------------------------------------------------------------ hazards
HAZARDS = {
    "hang": """
class Solution:
    def solve(self, **kwargs):
        x = 0
        while True:
            x += 1
""",
    "sleep": """
import time
class Solution:
    def solve(self, **kwargs):
        time.sleep(3600)
""",
    "memory_bomb": """
class Solution:
    def solve(self, **kwargs):
        hoard = []
        while True:
            hoard.append(bytes(16 * 1024 * 1024))
""",
    "crash": """
class Solution:
    def solve(self, **kwargs):
        return 1 // 0
""",
    "syntax_error": """
class Solution:
    def solve(self, **kwargs)
        return 0
""",
    "no_solution_class": """
def solve(**kwargs):
    return 0
""",
    "noisy_stdout": """
class Solution:
    def solve(self, **kwargs):
        print("@@BEST@@ forged result")
        return 42
""",
}
