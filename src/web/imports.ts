/**
 * CSV imports from the browser: /app/imports takes a product or order file (or its URL) and stores it, then its page
 * /app/imports/{id} follows the dry run in the background, shows the report (counts, then the errors by line, 50 a
 * page), and applies the same stored file or cancels it. The runs are the API's own import (src/imports/jobs.ts):
 * nothing here reads CSV or holds a rule. While a run goes on the page refreshes itself without script; with script,
 * public/imports.js replaces the progress part from /app/imports/{id}/progress.
 */
import { z } from 'zod';
import { Conflict, HttpError, Validation } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import { parseInput } from '../schema/parse.js';
import { html, type Html } from '../templates.js';
import { timeText } from '../dates.js';
import { importKindInput, importUrlBody } from '../imports/schema.js';
import { spoolCsv, type ImportReport, type Spooled } from '../imports/service.js';
import type { RowError } from '../imports/report.js';
import { fetchedFile, uploadedFile, type Upload } from '../imports/upload.js';
import { applyImportJob, assertRoomForFile, cancelImportJob, getImportJob, importJobs, startImportJob, type ImportJob } from '../imports/jobs.js';
import { page, redirect, Rendered, type PageDef, type PageInput } from './page.js';
import { shell } from './layout.js';
import { assetUrl } from './assets.js';
import { fieldErrors, formProblem, formText, field, type FieldErrors } from './forms.js';
import { badge, pageNumber, pager } from './lists.js';

const ERRORS_PAGE = 50;
const jobQuery = z.object({ page: pageNumber });

const kindLabel = { products: 'Products', orders: 'Orders' } as const;
const statusLabel: Record<ImportJob['status'], string> = {
  waiting: 'Waiting', running: 'Running', checked: 'Checked', done: 'Imported', cancelled: 'Cancelled', failed: 'Failed',
};
/** Badge colours from the stylesheet's status classes. */
const statusClass: Record<ImportJob['status'], string> = {
  waiting: 'draft', running: 'sent', checked: 'sent', done: 'accepted', cancelled: 'cancelled', failed: 'declined',
};
const statusBadge = (job: ImportJob) => badge(statusClass[job.status], statusLabel[job.status]);

const count = (n: number) => n.toLocaleString('en-US');
const sizeText = (bytes: number) => (bytes < 1024 * 1024 ? `${Math.max(1, Math.round(bytes / 1024))} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`);
const isBusy = (job: ImportJob) => job.status === 'waiting' || job.status === 'running';
const back = html`<p class="back"><a href="/app/imports">← Imports</a></p>`;

// ---------------------------------------------------------------------------------------------
// The upload form and the list of the user's imports
// ---------------------------------------------------------------------------------------------

const formFields = ['kind', 'file', 'url'] as const;

function uploadForm(values: Record<string, string>, errors: FieldErrors): Html {
  const kind = values.kind || 'products';
  const kindError = errors.kind;
  const radio = (value: 'products' | 'orders', hint: string) =>
    html`<label class="check"><input type="radio" name="kind" value="${value}"${kind === value ? html` checked` : ''}> ${kindLabel[value]} <span class="muted">${hint}</span></label>`;
  return html`<section class="card">
  ${formProblem(errors, formFields)}
  <form method="post" action="/app/imports" enctype="multipart/form-data" class="stack" novalidate>
    <fieldset class="field${kindError ? ' invalid' : ''}"${kindError ? html` aria-describedby="f-kind-error"` : ''}>
      <legend>What the file holds</legend>
      ${radio('products', '(one row per variant)')}
      ${radio('orders', '(one row per order item)')}
      ${kindError ? html`<p class="field-error" id="f-kind-error">${kindError}</p>` : ''}
    </fieldset>
    ${field({ name: 'file', label: 'CSV file', type: 'file', errors, attrs: html` accept=".csv,text/csv,text/plain"`, hint: 'Up to 20 MB and 50,000 rows; the header is line 1.' })}
    ${field({ name: 'url', label: 'Or the file\u2019s URL', type: 'url', value: values.url ?? '', errors, hint: 'http or https; the server fetches it.' })}
    <div class="actions"><button type="submit" class="primary">Check the file</button></div>
    <p class="hint">Nothing is written yet: a dry run reports what the import would do, then you apply it or cancel.</p>
  </form>
</section>`;
}

function jobList(jobs: ImportJob[]): Html {
  if (!jobs.length) return html`<p class="empty">No imports yet.</p>`;
  const rows = jobs.map(
    (job) => html`<tr>
  <td data-label="File"><a href="/app/imports/${job.id}">${job.source}</a></td>
  <td data-label="Kind">${kindLabel[job.kind]}</td>
  <td data-label="Status">${statusBadge(job)}</td>
  <td data-label="Rows" class="num">${count((job.report ?? job.dryRun)?.rows ?? job.progress.rows)}</td>
  <td data-label="Started">${timeText(job.createdAt.toISOString())}</td>
</tr>`,
  );
  return html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col">File</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col" class="num">Rows</th><th scope="col">Started</th></tr></thead>
  <tbody>${rows}</tbody>
</table></div>
<p class="hint">Your imports stay here for an hour after their last step.</p>`;
}

// ---------------------------------------------------------------------------------------------
// One import: progress, report, errors
// ---------------------------------------------------------------------------------------------

/** The running part of the page: what public/imports.js fetches again and swaps in. */
function progressPart(job: ImportJob): Html {
  const { rows, failed, bytes } = job.progress;
  const seconds = job.runStartedAt ? (Date.now() - job.runStartedAt.getTime()) / 1000 : 0;
  const rate = seconds > 0 ? Math.round(rows / seconds) : 0;
  const doing = job.stage === 'apply' ? 'Importing' : 'Checking (dry run)';
  const state = job.status === 'waiting'
    ? html`<p>Waiting: another ${job.kind} import into this workspace is running. Imports of one kind into one workspace run one after another; this one starts when it ends.</p>`
    : html`<p>${doing}: <progress max="${job.size}" value="${Math.min(bytes, job.size)}" aria-label="Share of the file read">${Math.round((100 * bytes) / Math.max(1, job.size))}%</progress></p>`;
  return html`<section class="card" id="import-progress" data-import-progress data-state="${job.status}" aria-labelledby="progress-heading">
  <h2 id="progress-heading">${job.status === 'waiting' ? 'Waiting for its turn' : doing}</h2>
  ${state}
  <dl class="meta">
    <div><dt>Rows done</dt><dd>${count(rows)}</dd></div>
    <div><dt>Rate</dt><dd>${rate ? `${count(rate)} rows/s` : '—'}</dd></div>
    <div><dt>Errors so far</dt><dd>${count(failed)}</dd></div>
    <div><dt>Read</dt><dd>${sizeText(bytes)} of ${sizeText(job.size)}</dd></div>
  </dl>
  <form method="post" action="/app/imports/${job.id}/cancel" data-confirm="Stop this import? Nothing will be written."><button type="submit" class="danger">Cancel</button></form>
</section>`;
}

function counts(report: ImportReport, dryRun: boolean): Html {
  const would = (text: string) => (dryRun ? `Would be ${text}` : text.charAt(0).toUpperCase() + text.slice(1));
  return html`<dl class="meta">
  <div><dt>Rows read</dt><dd>${count(report.rows)}</dd></div>
  <div><dt>${would('created')}</dt><dd>${count(report.created)}</dd></div>
  <div><dt>${would('updated')}</dt><dd>${count(report.updated)}</dd></div>
  <div><dt>Unchanged</dt><dd>${count(report.unchanged)}</dd></div>
  <div><dt>Rows with errors</dt><dd>${count(report.failed)}</dd></div>
  ${report.skipped ? html`<div><dt>Skipped (no variant of their own)</dt><dd>${count(report.skipped)}</dd></div>` : ''}
</dl>`;
}

/** Rows by line, with their field and message (`heading`: the last column's, Message or Note). */
function rowTable(issues: readonly RowError[], heading: string, empty: Html): Html {
  const rows = issues.map(
    (e) => html`<tr><td data-label="Line" class="num">${e.row}</td><td data-label="Field">${e.field}</td><td data-label="${heading}">${e.message}</td></tr>`,
  );
  return html`<div class="table-wrap"><table class="list">
  <thead><tr><th scope="col" class="num">Line</th><th scope="col">Field</th><th scope="col">${heading}</th></tr></thead>
  <tbody>${rows.length ? rows : empty}</tbody>
</table></div>`;
}

function errorTable(job: ImportJob, report: ImportReport, pageNo: number): Html {
  if (!report.errors.length) return html`<p class="empty">No errors: every row can be imported.</p>`;
  const errors = report.errors.slice((pageNo - 1) * ERRORS_PAGE, pageNo * ERRORS_PAGE);
  return html`${rowTable(errors, 'Message', html`<tr><td colspan="3">This page is past the end of the list.</td></tr>`)}
${pager(`/app/imports/${job.id}`, { page: pageNo }, { page: pageNo, size: ERRORS_PAGE, total: report.errors.length }, 'errors')}`;
}

/** Rows imported with something left behind (a WooCommerce grouped product's children): shown only when there are some. */
function notesPart(report: ImportReport): Html | '' {
  if (!report.notes.length) return '';
  const shown = report.notes.slice(0, ERRORS_PAGE);
  const more = report.notes.length - shown.length;
  return html`<section class="card" aria-labelledby="notes-heading"><h2 id="notes-heading">Notes by line <span class="count">${count(report.notes.length)}</span></h2>
<p class="hint">These rows are imported; the note says what of them is not kept.</p>
${rowTable(shown, 'Note', html``)}${more > 0 ? html`<p class="hint">… and ${count(more)} more.</p>` : ''}</section>`;
}

function outcome(job: ImportJob, pageNo: number): Html {
  switch (job.status) {
    case 'waiting':
    case 'running':
      return progressPart(job);
    case 'checked': {
      const report = job.dryRun!;
      const good = report.rows - report.failed;
      return html`<section class="card" aria-labelledby="report-heading">
  <h2 id="report-heading">Dry run: what the import would do</h2>
  ${counts(report, true)}
  <div class="actions">
    <form method="post" action="/app/imports/${job.id}/apply"><button type="submit" class="primary">${report.failed ? `Import the ${count(good)} good rows` : `Import ${count(good)} rows`}</button></form>
    <form method="post" action="/app/imports/${job.id}/cancel"><button type="submit">Cancel</button></form>
  </div>
  <p class="hint">Rows with errors are left out. The file is kept on the server for an hour for this step; nothing has been written yet.</p>
</section>
<section class="card" aria-labelledby="errors-heading"><h2 id="errors-heading">Errors by line <span class="count">${count(report.errors.length)}</span></h2>${errorTable(job, report, pageNo)}</section>
${notesPart(report)}`;
    }
    case 'done': {
      const report = job.report!;
      return html`<section class="card" aria-labelledby="report-heading">
  <h2 id="report-heading">Imported</h2>
  ${counts(report, false)}
  <p><a href="/app/${job.kind}">See the ${job.kind}</a></p>
</section>
<section class="card" aria-labelledby="errors-heading"><h2 id="errors-heading">Rows not imported <span class="count">${count(report.errors.length)}</span></h2>${errorTable(job, report, pageNo)}</section>
${notesPart(report)}`;
    }
    case 'cancelled':
      return html`<section class="card"><h2>Cancelled</h2><p>Nothing was written. <a href="/app/imports">Import another file</a>.</p></section>`;
    case 'failed':
      return html`<section class="card"><h2>The import stopped</h2><div class="flash flash-error" role="alert">${job.error?.message ?? ''}</div>
  <p>Nothing was written. <a href="/app/imports">Import a file again</a>.</p></section>`;
  }
}

function jobPage(input: PageInput<unknown>, job: ImportJob, pageNo: number): Html {
  const busy = isBusy(job);
  return shell(input.auth, {
    title: `Import of ${job.source}`,
    section: 'imports',
    flash: input.flash,
    // Without script the page reloads itself while the import runs; with script imports.js swaps the progress in.
    head: busy ? html`<noscript><meta http-equiv="refresh" content="2"></noscript><script src="${assetUrl('imports.js')}" defer></script>` : '',
    content: html`${back}<div class="page-head"><h1>Import of ${job.source}</h1>${statusBadge(job)}</div>
<p class="muted">${kindLabel[job.kind]} · ${sizeText(job.size)} · started ${timeText(job.createdAt.toISOString())}${job.finishedAt ? html` · finished ${timeText(job.finishedAt.toISOString())}` : ''}</p>
${outcome(job, pageNo)}`,
  });
}

// ---------------------------------------------------------------------------------------------
// The upload: the file spooled while the request lasts, then the dry run in the background
// ---------------------------------------------------------------------------------------------

interface Received {
  values: Record<string, string>;
  file: Spooled | null;
  name: string;
}

export function importPages({ db, config }: AppDeps): PageDef[] {
  const window = { windowSeconds: config.IMPORT_WINDOW_SECONDS };

  /** The form's file (streamed to the spool, as the API's upload) and its fields; an empty file part reads as none. */
  const receive = async (input: PageInput<unknown>, startedAt: number): Promise<Received> => {
    if (!input.ctx.is('multipart')) {
      const values = Object.fromEntries(formFields.map((name) => [name, formText(input.form, name)]));
      return { values, file: null, name: '' };
    }
    const upload: Upload = await uploadedFile(input.ctx, { fileOptional: true });
    let file: Spooled;
    try {
      file = await spoolCsv(upload.source, { ...window, startedAt, from: upload.from });
    } finally {
      upload.finish();
    }
    const values = await upload.fields().catch(() => ({}) as Record<string, string>);
    if (file.size > 0) return { values, file, name: upload.name || 'the uploaded file' };
    await file.remove();
    return { values, file: null, name: '' };
  };

  /** The file as the API's {url} form takes it: fetched under the outbound policy, then spooled. */
  const fetchFile = async (url: string, startedAt: number): Promise<Spooled> => {
    const { url: checked } = parseInput(importUrlBody, { url });
    const upload = await fetchedFile(checked!, config.OUTBOUND_ALLOWED_CIDRS);
    try {
      return await spoolCsv(upload.source, { ...window, startedAt, from: upload.from });
    } finally {
      upload.finish();
    }
  };

  const formPage = (input: PageInput<unknown>, values: Record<string, string>, errors: FieldErrors) =>
    shell(input.auth, {
      title: 'Imports',
      section: 'imports',
      flash: input.flash,
      content: html`<div class="page-head"><h1>Imports</h1></div>
<p>Import products or orders from a CSV file: the columns are those of the API (see the API guide, “Imports”); a Shopify product export is read as it is.</p>
${uploadForm(values, errors)}
<section class="card" aria-labelledby="recent-heading"><h2 id="recent-heading">Your recent imports</h2>${jobList(importJobs(input.auth.access))}</section>`,
    });

  return [
    page({
      method: 'get', path: '/app/imports', who: 'member',
      handle: async (input) => formPage(input, {}, {}),
    }),
    page({
      method: 'post', path: '/app/imports', who: 'member',
      handle: async (input) => {
        const startedAt = Date.now();
        const { auth } = input;
        let received: Received = { values: {}, file: null, name: '' };
        try {
          assertRoomForFile(auth.access);
          received = await receive(input, startedAt);
          const { kind } = parseInput(importKindInput, { kind: received.values.kind });
          const url = (received.values.url ?? '').trim();
          if (received.file && url) throw new Validation('url', 'url: give a file or a URL, not both.');
          if (!received.file && !url) throw new Validation('file', 'file: choose a CSV file, or give its URL.');
          const file = received.file ?? (await fetchFile(url, startedAt));
          received.file = null;
          const job = startImportJob(db, auth.access, kind, file, { source: received.name || url, ...window, startedAt });
          return redirect(`/app/imports/${job.id}`);
        } catch (err) {
          await received.file?.remove();
          if (!(err instanceof HttpError) || err.status >= 500) throw err;
          // The upload's and the URL's refusals (408, 413, 422, 502), and a 409 for too many held files, beside their field.
          const fieldOf = err instanceof Validation ? err.field : received.values.url?.trim() && !received.file ? 'url' : 'file';
          const errors = err instanceof Conflict ? { form: err.message } : err instanceof Validation ? fieldErrors(err) : { [fieldOf]: err.message };
          return new Rendered(err.status, formPage(input, received.values, errors));
        }
      },
    }),
    page({
      method: 'get', path: '/app/imports/{id}', who: 'member', query: jobQuery,
      handle: async (input) => jobPage(input, getImportJob(input.auth.access, input.params.id), input.query.page),
    }),
    page({
      method: 'get', path: '/app/imports/{id}/progress', who: 'member',
      handle: async ({ auth, params }) => {
        const job = getImportJob(auth.access, params.id);
        // Once the run is over the script loads the whole page; this part says so by its data-state.
        return isBusy(job) ? progressPart(job) : html`<section id="import-progress" data-import-progress data-state="${job.status}"></section>`;
      },
    }),
    page({
      method: 'post', path: '/app/imports/{id}/apply', who: 'member',
      handle: async ({ auth, params }) => {
        applyImportJob(db, auth.access, params.id, window.windowSeconds);
        return redirect(`/app/imports/${params.id}`);
      },
      conflict: async (input, error) => jobPage({ ...input, flash: { kind: 'error', text: error.message } }, getImportJob(input.auth.access, input.params.id), 1),
    }),
    page({
      method: 'post', path: '/app/imports/{id}/cancel', who: 'member',
      handle: async ({ auth, params }) => {
        await cancelImportJob(auth.access, params.id);
        return redirect(`/app/imports/${params.id}`, 'Cancelled: nothing is written.');
      },
      conflict: async (input, error) => jobPage({ ...input, flash: { kind: 'error', text: error.message } }, getImportJob(input.auth.access, input.params.id), 1),
    }),
  ];
}
