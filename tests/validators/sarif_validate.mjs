#!/usr/bin/env node
// Validate SARIF files with the SARIF Multitool's `validate` verb (@microsoft/sarif-multitool, a
// self-contained .NET single-file binary shipped inside the npm package: no .NET runtime needed)
// and print one JSON object per run: every result with rule id, rule name, level, line/column,
// JSON path and the formatted message.
//
//   node sarif_validate.mjs FILE.sarif [...] [--rule-kind "Sarif;Gh"] [--network] [--compact]
//
// Rule kinds: Sarif (SARIF1xxx = spec/schema errors, SARIF2xxx = best-practice warnings/notes;
// default), Gh / Ghas (GitHub code-scanning ingestion rules GH1xxx/GH2xxx), GHAzDO / Ado
// (GitHub Advanced Security for Azure DevOps), AI (AI-generated findings). Default "Sarif;Gh".
// Offline by default: SARIF2006 (UrisShouldBeReachable) sends an HTTP GET to every URI in the
// log, so without network it reports each one as unreachable; it is disabled through a
// configuration file and listed under not_run unless --network is given.
// The Multitool exits 0 even when it reports errors; this wrapper exits 1 when any result has
// level "error", 0 otherwise, 2 on a usage error or when the Multitool cannot run.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync, readFileSync, rmSync, accessSync, constants } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'

const require = createRequire(import.meta.url)
const args = process.argv.slice(2)
let ruleKind = 'Sarif;Gh'
const files = []
const flags = new Set()
for (let i = 0; i < args.length; i++) {
  const a = args[i]
  if (a === '--rule-kind') ruleKind = args[++i]
  else if (a.startsWith('--rule-kind=')) ruleKind = a.slice('--rule-kind='.length)
  else if (['--network', '--compact'].includes(a)) flags.add(a)
  else if (a.startsWith('--')) {
    console.error(`sarif_validate: unknown option ${a}`)
    process.exit(2)
  } else files.push(a)
}
if (!files.length || !ruleKind) {
  console.error('usage: node sarif_validate.mjs FILE.sarif [...] [--rule-kind "Sarif;Gh"] [--network] [--compact]')
  process.exit(2)
}

// @microsoft/sarif-multitool -> optional dependency @microsoft/sarif-multitool-<platform>
let exe
try {
  exe = require(`@microsoft/sarif-multitool-${process.platform}`)
} catch {
  console.error(`sarif_validate: @microsoft/sarif-multitool-${process.platform} is not installed (npm ci)`)
  process.exit(2)
}
try {
  accessSync(exe, constants.X_OK)
} catch {
  // the package's postinstall (chmod u+x) may have been skipped (npm --ignore-scripts / allowScripts)
  console.error(`sarif_validate: ${exe} is not executable (chmod +x it, or allow the package's postinstall script)`)
  process.exit(2)
}
const toolVersion = require('@microsoft/sarif-multitool/package.json').version

const work = mkdtempSync(join(tmpdir(), 'sarif-validate-'))
process.on('exit', () => rmSync(work, { recursive: true, force: true }))
const notRun = []
let config = []
if (!flags.has('--network')) {
  const cfg = join(work, 'offline.xml')
  writeFileSync(cfg, `<?xml version="1.0" encoding="utf-8"?>
<Properties>
  <Properties Key="SARIF2006.UrisShouldBeReachable.Options">
    <Property Key="RuleEnabled" Value="Disabled" Type="Driver.RuleEnabledState" />
  </Properties>
</Properties>
`)
  config = ['-c', cfg]
  notRun.push({ ruleId: 'SARIF2006', name: 'UrisShouldBeReachable', why: 'needs network (HTTP GET of every URI); pass --network' })
}

const env = {
  ...process.env,
  DOTNET_CLI_TELEMETRY_OPTOUT: '1',
  // culture data is not needed to validate; lets the binary run where libicu is missing
  DOTNET_SYSTEM_GLOBALIZATION_INVARIANT: process.env.DOTNET_SYSTEM_GLOBALIZATION_INVARIANT ?? '1',
}

function format(rule, message) {
  if (message?.text) return message.text
  let t = rule?.messageStrings?.[message?.id]?.text ?? message?.id ?? ''
  for (const [i, a] of (message?.arguments ?? []).entries()) t = t.replaceAll(`{${i}}`, a)
  return t
}

let worst = 0
const runs = []
for (const [n, file] of files.entries()) {
  const out = join(work, `out-${n}.sarif`)
  const t0 = performance.now()
  const p = spawnSync(exe, ['validate', resolve(file), '-o', out, '--level', 'Error;Warning;Note',
    '--rule-kind', ruleKind, '--log', 'ForceOverwrite', ...config], { env, encoding: 'utf8', maxBuffer: 1 << 28 })
  const ms = +(performance.now() - t0).toFixed(1)
  if (p.error || p.status !== 0) {
    console.error(`sarif_validate: ${file}: Multitool failed (${p.error?.message ?? `exit ${p.status}`})\n${(p.stdout ?? '').slice(-4000)}${(p.stderr ?? '').slice(-4000)}`)
    process.exit(2)
  }
  const log = JSON.parse(readFileSync(out, 'utf8'))
  const run = log.runs[0]
  const rules = new Map((run.tool.driver.rules ?? []).map((r) => [r.id, r]))
  const results = (run.results ?? []).map((r) => {
    const rule = rules.get(r.ruleId)
    const region = r.locations?.[0]?.physicalLocation?.region ?? {}
    return {
      ruleId: r.ruleId,
      name: rule?.name,
      // SARIF §3.27.10: absent level = the rule's default, else "warning"
      level: r.level ?? rule?.defaultConfiguration?.level ?? 'warning',
      line: region.startLine,
      column: region.startColumn,
      jsonPath: r.message?.arguments?.[0],
      message: format(rule, r.message),
    }
  })
  const invocationNotes = (run.invocations ?? []).flatMap((i) => [...(i.toolExecutionNotifications ?? []), ...(i.toolConfigurationNotifications ?? [])])
    .map((x) => ({ id: x.descriptor?.id ?? x.associatedRule?.id, level: x.level, message: x.message?.text }))
  const byRule = {}
  for (const r of results) {
    const k = `${r.ruleId} ${r.name} (${r.level})`
    byRule[k] = (byRule[k] ?? 0) + 1
  }
  const count = (lvl) => results.filter((r) => r.level === lvl).length
  if (count('error')) worst = 1
  runs.push({
    file,
    validator: `@microsoft/sarif-multitool ${toolVersion} validate --rule-kind "${ruleKind}"`,
    valid: count('error') === 0,
    summary: { errors: count('error'), warnings: count('warning'), notes: count('note'), by_rule: byRule },
    ms,
    not_run: notRun,
    tool_notifications: invocationNotes,
    results,
  })
}
const result = runs.length === 1 ? runs[0] : runs
console.log(flags.has('--compact') ? JSON.stringify(result) : JSON.stringify(result, null, 2))
process.exit(worst)
