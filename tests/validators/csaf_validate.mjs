#!/usr/bin/env node
// Run every CSAF 2.0 test of @secvisogram/csaf-validator-lib (schema, mandatory 6.1.x,
// optional/recommended 6.2.x, informative 6.3.x) on one or more CSAF 2.0 JSON files and print
// one JSON object per run: every test with its errors, warnings and infos.
//
//   node csaf_validate.mjs FILE.json [FILE.json ...] [--network] [--no-spellcheck]
//                          [--dictionary WORDS.dic] [--compact]
//
// Offline by default: 6.3.6 and 6.3.7 send an HTTP HEAD to every URL in the document (non-self
// and self references); without network every URL "fails to resolve", so they are reported as
// not run unless --network is given. 6.3.8 (spell check) shells out to `hunspell -d <lang>`; it
// is reported as not run when hunspell or the dictionary for document.lang is missing;
// --dictionary adds a personal word list (hunspell -p: one word per line) for domain terms.
// Exit status: 0 when every file passes the schema and mandatory tests, 1 when one does not,
// 2 on a usage error or an unreadable / non-JSON file.
import { readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, symlinkSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import validateStrict from '@secvisogram/csaf-validator-lib/validateStrict.js'
import * as schema from '@secvisogram/csaf-validator-lib/schemaTests.js'
import * as mandatory from '@secvisogram/csaf-validator-lib/mandatoryTests.js'
import * as optional from '@secvisogram/csaf-validator-lib/optionalTests.js'
import * as informative from '@secvisogram/csaf-validator-lib/informativeTests.js'

const require = createRequire(import.meta.url)
const libVersion = require('@secvisogram/csaf-validator-lib/package.json').version

const NETWORK_TESTS = new Set(['informativeTest_6_3_6', 'informativeTest_6_3_7'])
const SPELL_TEST = 'informativeTest_6_3_8'

const argv = process.argv.slice(2)
let personalDict = null
const args = []
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--dictionary') personalDict = argv[++i]
  else args.push(argv[i])
}
const flags = new Set(args.filter((a) => a.startsWith('--')))
const files = args.filter((a) => !a.startsWith('--'))
for (const f of flags) {
  if (!['--network', '--no-spellcheck', '--compact'].includes(f)) {
    console.error(`csaf_validate: unknown option ${f}`)
    process.exit(2)
  }
}
if (files.length === 0) {
  console.error('usage: node csaf_validate.mjs FILE.json [...] [--network] [--no-spellcheck] [--compact]')
  process.exit(2)
}

/** test function name -> spec id, e.g. mandatoryTest_6_1_27_3 -> 6.1.27.3 */
function specId(name) {
  const m = name.match(/_(\d+(?:_\d+)+)$/)
  return m ? m[1].replaceAll('_', '.') : name
}

/** hunspell -D prints its search path and the available dictionaries on stderr. null: no hunspell */
function hunspellDictionaries() {
  const r = spawnSync('hunspell', ['-D'], { input: '', encoding: 'utf8' })
  if (r.error) return null
  const lines = r.stderr.split('\n')
  const a = lines.findIndex((l) => l.startsWith('AVAILABLE DICTIONARIES'))
  const b = lines.findIndex((l) => l.startsWith('LOADED DICTIONARY'))
  if (a < 0) return []
  return lines
    .slice(a + 1, b < 0 ? undefined : b)
    .map((l) => l.trim())
    .filter(Boolean)
}

/**
 * The test asks hunspell for `<language>` or `<language>_<REGION>` from document.lang. CSAF
 * documents usually say "en", while distributions ship en_US etc.; when only regional
 * dictionaries exist, link the first (en_US preferred) as <language> in a temporary folder and
 * put it on DICPATH (the library's README suggests the same symlink in /usr/share/hunspell).
 */
function spellDictionaryFor(doc, dicts) {
  const lang = doc?.document?.lang
  if (typeof lang !== 'string') return { ok: false, why: 'document.lang missing' }
  const [language, region] = lang.split('-')
  const want = region ? `${language}_${region.toUpperCase()}` : language
  const byName = new Map(dicts.map((p) => [p.split('/').at(-1), p]))
  if (byName.has(want)) return { ok: true, dict: want, path: byName.get(want) }
  if (!region) {
    const regional = [...byName.keys()].filter((n) => n.startsWith(`${language}_`))
    regional.sort((x, y) => (y === `${language}_US`) - (x === `${language}_US`))
    if (regional.length) {
      const src = byName.get(regional[0])
      const dir = mkdtempSync(join(tmpdir(), 'csaf-hunspell-'))
      process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
      for (const ext of ['aff', 'dic']) {
        if (existsSync(`${src}.${ext}`)) symlinkSync(`${src}.${ext}`, join(dir, `${language}.${ext}`))
      }
      process.env.DICPATH = process.env.DICPATH ? `${dir}:${process.env.DICPATH}` : dir
      return { ok: true, dict: want, path: src, aliased: regional[0] }
    }
  }
  return { ok: false, why: `no hunspell dictionary "${want}" for document.lang "${lang}" (installed: ${[...byName.keys()].join(', ') || 'none'})` }
}

/** the library's runHunspell with a personal word list added */
function hunspellWith(dic) {
  return ({ dictionary, input }) => new Promise((resolve, reject) => {
    const r = spawnSync('hunspell', ['-d', dictionary, '-p', dic], { input, encoding: 'utf8' })
    if (r.error) reject(r.error)
    else resolve(r.stdout)
  })
}

const sets = [
  ['schema', schema],
  ['mandatory', mandatory],
  ['optional', optional],
  ['informative', informative],
]

const hunspellList = flags.has('--no-spellcheck') ? null : hunspellDictionaries()
let worst = 0
const runs = []

for (const file of files) {
  let doc
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'))
  } catch (e) {
    console.error(`csaf_validate: ${file}: ${e.message}`)
    process.exit(2)
  }
  const t0 = performance.now()
  const tests = []
  const notRun = []
  let spell = null
  for (const [set, module] of sets) {
    for (const test of Object.values(module)) {
      const name = test.name
      if (NETWORK_TESTS.has(name) && !flags.has('--network')) {
        notRun.push({ name, id: specId(name), set, why: 'needs network (HTTP HEAD on every URL); pass --network' })
        continue
      }
      if (name === SPELL_TEST) {
        if (hunspellList === null) {
          notRun.push({ name, id: specId(name), set, why: flags.has('--no-spellcheck') ? '--no-spellcheck' : 'hunspell not installed' })
          continue
        }
        const d = spellDictionaryFor(doc, hunspellList)
        if (!d.ok) {
          notRun.push({ name, id: specId(name), set, why: d.why })
          continue
        }
        spell = d
      }
      const s = performance.now()
      try {
        // validateStrict only accepts the library's own test functions; 6.3.8 with a personal
        // dictionary is the same library function called with its documented hunspell parameter
        const result = name === SPELL_TEST && personalDict
          ? { tests: [{ isValid: true, errors: [], warnings: [], infos: [], ...(await test(doc, { hunspell: hunspellWith(personalDict) })) }] }
          : await validateStrict([test], doc)
        const r = result.tests[0]
        tests.push({
          name, id: specId(name), set,
          isValid: r.isValid,
          errors: r.errors, warnings: r.warnings, infos: r.infos,
          ms: +(performance.now() - s).toFixed(2),
        })
      } catch (e) {
        tests.push({ name, id: specId(name), set, isValid: null, crashed: String(e?.message ?? e), errors: [], warnings: [], infos: [], ms: +(performance.now() - s).toFixed(2) })
      }
    }
  }
  // CSAF 2.0 section 9.1.14 (CSAF full validator): valid = schema + all mandatory tests pass
  const conformant = tests.filter((t) => t.set === 'schema' || t.set === 'mandatory').every((t) => t.isValid === true)
  const count = (k) => tests.reduce((n, t) => n + t[k].length, 0)
  const run = {
    file,
    validator: `@secvisogram/csaf-validator-lib ${libVersion}`,
    node: process.version,
    valid: conformant,
    summary: { errors: count('errors'), warnings: count('warnings'), infos: count('infos'), tests_run: tests.length, not_run: notRun.length, crashed: tests.filter((t) => t.crashed).length },
    ms: +(performance.now() - t0).toFixed(1),
    findings: tests.flatMap((t) => ['errors', 'warnings', 'infos'].flatMap((k) => t[k].map((f) => ({ id: t.id, test: t.name, level: k.slice(0, -1), instancePath: f.instancePath, message: f.message })))),
    not_run: notRun,
    spellcheck: spell,
    tests,
  }
  if (!conformant) worst = 1
  runs.push(run)
}

const out = runs.length === 1 ? runs[0] : runs
console.log(flags.has('--compact') ? JSON.stringify(out) : JSON.stringify(out, null, 2))
process.exit(worst)
