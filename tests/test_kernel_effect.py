#!/usr/bin/env python3
"""test_kernel_effect.py -- tools/kernel_effect.py on two small databases made here.

Only the columns the tool reads exist (sweep_runs, runs, summary). The committed database has
rows a and b of sweep s, seeds 1-3, on kernel SkylakeX (a) and Prescott (b); the twins re-make
the same run ids on Haswell with known shifts, so every printed number is known in advance.
"""
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools', 'kernel_effect.py')
VER = 'OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY %s MAX_THREADS=64'


def make(path, rows):
    """rows: (sweep, label, seed, run_id, kernel, val_loss, status)"""
    db = sqlite3.connect(path)
    db.executescript('create table sweep_runs(sweep, label, seed, run_id);'
                     'create table runs(run_id primary key, status, openblas_version);'
                     'create table summary(run_id, key, context, value);')
    for sw, lab, seed, rid, k, val, st in rows:
        db.execute('insert into sweep_runs values (?, ?, ?, ?)', (sw, lab, seed, rid))
        db.execute('insert or ignore into runs values (?, ?, ?)', (rid, st, VER % k))
        db.execute("insert into summary values (?, 'val_loss', '', ?)", (rid, val))
    db.commit()
    db.close()


def run(*args):
    p = subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


class KernelEffect(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.d.name, 'c.db')
        self.tw = os.path.join(self.d.name, 't.db')
        a = [1.50, 1.52, 1.54]
        b = [1.40, 1.43, 1.46]
        make(self.db, [('s', 'a', i + 1, 'a%d' % i, 'SkylakeX', a[i], 'finished') for i in range(3)] +
             [('s', 'b', i + 1, 'b%d' % i, 'Prescott', b[i], 'finished') for i in range(3)])
        # twins: a shifted by +0.01, +0.02, +0.03; b by 0, 0, 0 (all on Haswell)
        make(self.tw, [('s', 'a', i + 1, 'a%d' % i, 'Haswell', a[i] + 0.01 * (i + 1), 'finished') for i in range(3)] +
             [('s', 'b', i + 1, 'b%d' % i, 'Haswell', b[i], 'finished') for i in range(3)])

    def tearDown(self):
        self.d.cleanup()

    def test_per_run_row_and_contrast(self):
        rc, out, err = run('--db', self.db, self.tw)
        self.assertEqual(rc, 0, err)
        self.assertIn('s a s2 (a1): SkylakeX 1.5200, Haswell 1.5400: +0.0200', out)
        # row a: kernel effect mean 0.02 (sd 0.01, n 3); seed sd of a on SkylakeX 0.02 -> ratio 1.00
        self.assertIn('s a: kernel effect +0.0200 [', out)
        self.assertIn('seed sd 0.0200 (3 seeds on SkylakeX): |effect| / sd 1.00', out)
        self.assertIn('s b: kernel effect +0.0000 [+0.0000, +0.0000]', out)
        # contrast a - b: committed 0.10, 0.09, 0.08 (mean 0.09) across kernels; twins 0.11, 0.11, 0.11
        self.assertIn('s a - b, seeds 1,2,3: committed +0.0900 [', out)
        self.assertIn('(SkylakeX vs Prescott); twins +0.1100 [+0.1100, +0.1100]', out)
        self.assertIn('(Haswell vs Haswell)', out)

    def test_bad_input(self):
        rc, _, err = run('--db', self.db, os.path.join(self.d.name, 'missing.db'))
        self.assertEqual(rc, 2)
        self.assertIn('no such database', err)
        other = os.path.join(self.d.name, 'o.db')
        make(other, [('s', 'a', 1, 'zz', 'Haswell', 1.0, 'finished')])
        rc, out, err = run('--db', self.db, other)
        self.assertEqual(rc, 1)
        self.assertIn('no finished committed run zz', out)

    def test_hostile_text_is_escaped(self):
        evil = os.path.join(self.d.name, 'e.db')
        make(evil, [('s', 'a\x1b[2J\n!x', 1, 'a0', 'Has\x1bwell', 1.6, 'finished')])
        rc, out, _ = run('--db', self.db, evil)
        self.assertEqual(rc, 0)
        self.assertNotIn('\x1b', out)
        self.assertIn('a\\x1b[2J\\n!x', out)
        self.assertIn(', ? 1.6000', out)  # a kernel name that is not a plain word


if __name__ == '__main__':
    unittest.main()
